-- Keymap actions that only read or move within the chat buffer: code blocks (gc, gy, gf),
-- headers (]] [[) and the file under the cursor (gR).
local api = vim.api
local words = require("codecompanion_py.words")

local M = {}

-- The fenced code blocks of `buf`: { start = row, finish = row, lang = "lua" } (0-based rows,
-- the fence lines included), in buffer order. A fence closes only with as many backticks.
---@param buf integer
---@return table[]
function M.code_blocks(buf)
  local blocks, open = {}, nil
  for row, line in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local fence, lang = line:match("^%s*(```+)%s*([%w_+#.-]*)")
    if fence then
      if not open then
        open = { start = row - 1, fence = #fence, lang = lang }
      elseif #fence >= open.fence and lang == "" then
        table.insert(blocks, { start = open.start, finish = row - 1, lang = open.lang })
        open = nil
      end
    end
  end
  return blocks
end

-- gc: an empty code block under the cursor, in the language of the buffer the chat was
-- opened from, the cursor inside it in insert mode.
---@param chat CodeCompanionChat
function M.codeblock(chat)
  local row = api.nvim_win_get_cursor(0)[1]
  local lang = chat.context and chat.context.filetype or ""
  vim.bo[chat.bufnr].modifiable = true
  api.nvim_buf_set_lines(chat.bufnr, row, row, false, { "```" .. lang, "", "```" })
  api.nvim_win_set_cursor(0, { row + 2, 0 })
  vim.cmd("startinsert")
end

-- gy: the last code block's text into `interactions.chat.opts.register` (default "+").
---@param chat CodeCompanionChat
---@param register string
function M.yank_code(chat, register)
  local blocks = M.code_blocks(chat.bufnr)
  local last = blocks[#blocks]
  if not last then
    return vim.notify("CodeCompanion: there is no code block in this chat", vim.log.levels.WARN)
  end
  local lines = api.nvim_buf_get_lines(chat.bufnr, last.start + 1, last.finish, false)
  local ok = pcall(vim.fn.setreg, register, lines, "l")
  if not ok and register ~= '"' then
    vim.fn.setreg('"', lines, "l") -- no clipboard here: the unnamed register still gets it
    register = '"'
  end
  vim.notify(("CodeCompanion: yanked %s into register %s"):format(words.count(#lines, "line"), register))
end

-- ]] and [[: the next or previous `## ` header (the user's and the LLM's turns).
---@param chat CodeCompanionChat
---@param direction 1|-1
function M.jump_header(chat, direction)
  local row = api.nvim_win_get_cursor(0)[1]
  local lines = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  local last = direction > 0 and #lines or 1
  for r = row + direction, last, direction do
    if lines[r]:match("^## ") then
      api.nvim_win_set_cursor(0, { r, 0 })
      return
    end
  end
end

-- gf: fold every code block (manual folds, so the markdown around them stays open).
---@param chat CodeCompanionChat
function M.fold_code(chat)
  local blocks = M.code_blocks(chat.bufnr)
  for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
    api.nvim_win_call(win, function()
      vim.wo[win].foldmethod = "manual"
      for _, block in ipairs(blocks) do
        vim.cmd(("silent! %d,%dfold"):format(block.start + 1, block.finish + 1))
      end
    end)
  end
end

-- Open a path in a new tab, or go to the tab window that shows it already.
local function tabnew_reuse(path)
  local target = vim.fn.fnamemodify(path, ":p")
  for _, win in ipairs(api.nvim_list_wins()) do
    if vim.fn.fnamemodify(api.nvim_buf_get_name(api.nvim_win_get_buf(win)), ":p") == target then
      api.nvim_set_current_win(win)
      return
    end
  end
  vim.cmd("tabnew " .. vim.fn.fnameescape(path))
end

-- gR: the file under the cursor (`path`, `path:line`), opened by `goto_file_action`
-- (a command such as "tabnew" or "edit", or a function of the path; default: a new tab
-- or the window that shows it already).
---@param action? string|function
function M.goto_file(action)
  local word = vim.fn.expand("<cWORD>"):gsub("^[`'\"(%[]+", ""):gsub("[`'\",.)%]:]+$", "")
  local path, line = word:match("^(.-):(%d+)")
  path = path or word
  -- a regular file only: opening a FIFO the reply names blocks Neovim for good (even SIGTERM waits)
  local function a_file(name) return name ~= "" and (vim.uv.fs_stat(name) or {}).type == "file" end
  if not a_file(path) then
    local cfile = vim.fn.expand("<cfile>")
    if a_file(cfile) then
      path, line = cfile, nil
    else
      return vim.notify("CodeCompanion: no file under the cursor", vim.log.levels.WARN)
    end
  end
  local from = api.nvim_get_current_win()
  if type(action) == "function" then
    action(path)
  elseif type(action) == "string" and action ~= "" then
    vim.cmd(action .. " " .. vim.fn.fnameescape(path))
  else
    tabnew_reuse(path)
  end
  if line and api.nvim_get_current_win() ~= from then
    pcall(api.nvim_win_set_cursor, 0, { tonumber(line), 0 })
  end
end

return M
