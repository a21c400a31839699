-- Reading a text file the user pointed at (a #{file:}, a rules file, a prompt file).
local M = {}

-- The file's text, or nil and why (it cannot be opened, or it is not text).
function M.read_text(path)
  local handle, err = io.open(path, "rb")
  if not handle then
    return nil, tostring(err)
  end
  local text = handle:read("*a") or ""
  handle:close()
  if text:find("\0", 1, true) then
    return nil, vim.fn.fnamemodify(path, ":~:.") .. " is not a text file"
  end
  return text
end

return M
