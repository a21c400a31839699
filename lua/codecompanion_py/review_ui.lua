-- What the code review shows (code_review.lua has the state and the engine's calls): the
-- pending comments as virtual lines, the input a comment is written in, and the native diff.
local api = vim.api

local M = {}

-- `d` in the review's list: the file as the baseline has it, in a scratch buffer beside the
-- file, both with `:diffthis`. The user's `diffopt` is theirs: never set here. `do` in the
-- file pulls the baseline's lines back in. `answer` is the engine's { text, absent }.
---@param answer { text: string, absent?: boolean }
---@param target { path: string, line: integer, baseline_ref?: string }
---@param layout? "vertical"|"horizontal"
function M.diff(answer, target, layout)
  local file_win, file_buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  local lines = vim.split(answer.text or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines) -- the file's last newline
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden, vim.bo[buf].modifiable = "wipe", false
  vim.bo[buf].filetype = vim.bo[file_buf].filetype
  pcall(api.nvim_buf_set_name, buf, ("%s (%s)"):format(vim.fn.fnamemodify(target.path, ":~:."),
    answer.absent and "not in the baseline" or "baseline"))
  vim.cmd((layout == "horizontal" and "leftabove split" or "leftabove vsplit"))
  local base_win = api.nvim_get_current_win()
  api.nvim_win_set_buf(base_win, buf)
  vim.cmd("diffthis")
  api.nvim_set_current_win(file_win)
  vim.cmd("diffthis")
  pcall(api.nvim_win_set_cursor, file_win, { target.line, 0 })
  api.nvim_create_autocmd("BufWipeout", { buffer = buf, once = true, callback = function()
    if api.nvim_win_is_valid(file_win) then
      api.nvim_win_call(file_win, function() vim.cmd("diffoff") end)
    end
  end })
end

-- The comments on `buf`'s file, each as virtual lines above its first line.
---@param buf integer
---@param ns integer
---@param pending table[] { file, start_line, end_line, comment }
---@param shown table `display.virtual_text`
function M.draw(buf, ns, pending, shown)
  if not api.nvim_buf_is_loaded(buf) then
    return
  end
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local name = api.nvim_buf_get_name(buf)
  if shown.enabled == false or name == "" or vim.bo[buf].buftype ~= "" then
    return
  end
  local real = vim.uv.fs_realpath(name) or name
  for _, c in ipairs(pending) do
    if c.file == real or c.file == name then
      local lines = vim.tbl_map(function(line) return { { (shown.icon or "") .. line, "Comment" } } end,
        vim.split(c.comment, "\n", { plain = true }))
      local row = math.min(c.start_line, api.nvim_buf_line_count(buf)) - 1
      local mark = { virt_lines = lines, virt_lines_above = true, virt_lines_overflow = shown.overflow }
      if not pcall(api.nvim_buf_set_extmark, buf, ns, row, 0, mark) then
        mark.virt_lines_overflow = nil -- a Neovim before 0.11 has no such key
        pcall(api.nvim_buf_set_extmark, buf, ns, row, 0, mark)
      end
    end
  end
end

-- The input a comment is written in: <send> keys of the chat submit it, the chat's close keys
-- (and `q` in normal mode) leave it.
---@param title string
---@param default? string
---@param on_submit fun(text: string)
function M.input(title, default, on_submit)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].filetype = "markdown"
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(default or "", "\n", { plain = true }))
  local width = math.min(80, vim.o.columns - 4)
  local win = api.nvim_open_win(buf, true, { relative = "cursor", row = 1, col = 0, width = width, height = 5,
    border = "rounded", title = " " .. title .. " ", title_pos = "left" })
  vim.bo[buf].bufhidden = "wipe"
  local function close() pcall(api.nvim_win_close, win, true) end
  local keys = {}
  for _, map in ipairs(require("codecompanion_py.chat.keymaps").resolve(require("codecompanion_py").config)) do
    keys[map.name] = map.modes
  end
  local function bind(modes, fn)
    for mode, lhs in pairs(modes or {}) do
      for _, key in ipairs(type(lhs) == "table" and lhs or { lhs }) do
        vim.keymap.set(mode, key, fn, { buffer = buf, nowait = true })
      end
    end
  end
  bind(keys.send, function()
    local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    vim.cmd.stopinsert()
    close()
    on_submit(text)
  end)
  bind(keys.close, close)
  bind({ n = "q" }, close)
end

return M
