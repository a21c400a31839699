-- Words the user reads, as the engine writes them (codecompanion_py/words.py): a count
-- ("1 line", "2 lines") and a buffer's name (its file, relative to the working directory).
local M = {}

---@param n integer
---@param noun string
---@param plural? string when it is not noun .. "s"
---@return string
function M.count(n, noun, plural)
  return ("%d %s"):format(n, n == 1 and noun or plural or (noun .. "s"))
end

-- "buffer N" only for a buffer without a file.
---@param buf integer
---@return string
function M.buffer_name(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= "" and vim.fn.fnamemodify(name, ":.") or ("buffer " .. buf)
end

return M
