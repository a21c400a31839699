-- A read-only floating window in the middle of the editor (the chat's `?` and debug view).
local api = vim.api

local M = {}

---@class CodeCompanionFloatOpts
---@field title string
---@field width integer
---@field height integer
---@field keys string[] keys that close it
---@field filetype? string
---@field wrap? boolean
---@field minimal? boolean
---@field close_on_leave? boolean

---@param lines string[]
---@param opts CodeCompanionFloatOpts
---@return integer win
function M.open(lines, opts)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  if opts.filetype then
    vim.bo[buf].filetype = opts.filetype
  end
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local width, height = opts.width, opts.height
  local win = api.nvim_open_win(buf, true, {
    relative = "editor", width = width, height = height, border = "rounded",
    style = opts.minimal and "minimal" or nil,
    row = math.floor((vim.o.lines - height) / 2), col = math.floor((vim.o.columns - width) / 2),
    title = opts.title, title_pos = "center",
  })
  if opts.wrap then
    vim.wo[win].wrap = true
  end
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end
  for _, lhs in ipairs(opts.keys) do
    vim.keymap.set("n", lhs, close, { buffer = buf, nowait = true, desc = "close" })
  end
  if opts.close_on_leave then
    api.nvim_create_autocmd("WinLeave", { buffer = buf, once = true, callback = close })
  end
  return win
end

return M
