-- Where a chat buffer shows: `display.chat.window` as CodeCompanion has it.
--   layout       "vertical" | "horizontal" | "float" | "buffer" | "tab"
--   position     "left" | "right" (vertical), "top" | "bottom" (horizontal)
--   width/height a fraction of the editor (< 1) or columns/lines
--   full_height  vertical splits span the editor's height (botright/topleft) or the current window's
--   border, relative, row, col, title   the float's
--   opts         window-local options
-- A hidden chat keeps its buffer (and its state and stream); showing it again reuses it.
-- One chat window a tab, as in CodeCompanion: a chat opened while another shows takes its
-- window when both have the same layout (`w:codecompanion_layout`), else the other is hidden.
local api = vim.api

local M = {}

M.DEFAULTS = {
  layout = "vertical",
  width = 0.5,
  height = 0.8,
  border = "single",
  relative = "editor",
  full_height = true,
  opts = { breakindent = true, linebreak = true, wrap = true },
}

local function size(value, total)
  if type(value) == "number" then
    return value <= 1 and math.floor(total * value) or math.floor(value)
  end
end

---@param config table
---@return table
function M.options(config)
  local display = config.display and config.display.chat or {}
  return vim.tbl_deep_extend("force", vim.deepcopy(M.DEFAULTS), display.window or {})
end

-- A window of this tab showing a chat (`is_chat(buf)`) that a chat of this config's layout may take.
---@param config table
---@param is_chat fun(buf: integer): boolean
---@return integer|nil win
function M.reusable(config, is_chat)
  local layout = M.options(config).layout
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if vim.w[win].codecompanion_layout == layout and is_chat(api.nvim_win_get_buf(win)) then
      return win
    end
  end
end

-- Show `buf` in `reuse` (from M.reusable), else in a window opened as the options say; returns the window.
---@param buf integer
---@param config table
---@param reuse? integer
---@return integer win
function M.open(buf, config, reuse)
  local o = M.options(config)
  local layout = o.layout
  local win = reuse
  if win then -- the window's alternate stays what it was: hiding the chat goes back to it, not to the other chat
    api.nvim_set_current_win(win)
    vim.cmd.buffer({ buf, mods = { keepalt = true } })
  elseif layout == "float" then
    local float = vim.tbl_deep_extend("force", o, (config.display and config.display.chat or {}).floating_window or {})
    local width = size(float.width, vim.o.columns) or math.floor(vim.o.columns * 0.5)
    local height = size(float.height, vim.o.lines) or math.floor(vim.o.lines * 0.8)
    win = api.nvim_open_win(buf, true, {
      relative = float.relative or "editor", width = width, height = height, border = float.border,
      row = float.row or math.floor((vim.o.lines - height) / 2),
      col = float.col or math.floor((vim.o.columns - width) / 2),
      title = float.title, title_pos = float.title and "center" or nil,
    })
  elseif layout == "vertical" or layout == "horizontal" then
    local vertical = layout == "vertical"
    local first = o.position == (vertical and "left" or "top")
    local where = (vertical and o.full_height == false) and (first and "leftabove" or "rightbelow")
      or (first and "topleft" or "botright")
    vim.cmd(where .. (vertical and " vsplit" or " split"))
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
    local length = size(vertical and o.width or o.height, vertical and vim.o.columns or vim.o.lines)
    if length then
      (vertical and api.nvim_win_set_width or api.nvim_win_set_height)(win, length)
    end
  elseif layout == "tab" then
    vim.cmd("tabnew")
    local scratch = api.nvim_get_current_buf()
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
    if scratch ~= buf and api.nvim_buf_is_valid(scratch) and api.nvim_buf_get_name(scratch) == "" then
      pcall(api.nvim_buf_delete, scratch, {})
    end
  else -- "buffer": the current window
    win = api.nvim_get_current_win()
    api.nvim_win_set_buf(win, buf)
  end
  vim.w[win].codecompanion_layout = layout
  for name, value in pairs(o.opts or {}) do
    pcall(api.nvim_set_option_value, name, value, { scope = "local", win = win })
  end
  return win
end

-- The windows of the current tab that show `buf`.
---@param buf integer
---@return integer[]
function M.windows(buf)
  return vim.tbl_filter(function(win) return api.nvim_win_get_buf(win) == buf end, api.nvim_tabpage_list_wins(0))
end

---@param buf integer
---@return boolean
function M.visible(buf)
  return #M.windows(buf) > 0
end

-- Hide `buf`'s windows in this tab: closed, or when one cannot close (the last window but
-- floats), showing another buffer (the alternate, else an empty one). The buffer stays.
---@param buf integer
function M.hide(buf)
  for _, win in ipairs(M.windows(buf)) do
    if #api.nvim_tabpage_list_wins(0) == 1 or not pcall(api.nvim_win_close, win, false) then
      local other = vim.fn.bufnr("#")
      local usable = other > 0 and other ~= buf and api.nvim_buf_is_valid(other)
      api.nvim_win_set_buf(win, usable and other or api.nvim_create_buf(true, false))
    end
  end
end

return M
