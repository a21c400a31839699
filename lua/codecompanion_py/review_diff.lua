-- The code review's native diff (`d` in its quickfix list): the file as the baseline has it,
-- in a scratch buffer beside the file, both with `:diffthis`. The user's `diffopt` is theirs:
-- it is never set here. `do` in the file pulls the baseline's lines back in.
local api = vim.api

local M = {}

-- `answer` is the engine's { text, absent }; `target` { path, line, baseline_ref }.
---@param answer { text: string, absent?: boolean }
---@param target { path: string, line: integer, baseline_ref?: string }
---@param layout? "vertical"|"horizontal"
function M.show(answer, target, layout)
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

return M
