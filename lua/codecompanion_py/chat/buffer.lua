-- Writing into a chat buffer: text appended as it streams, paragraphs, shown blocks folded
-- when long, blocks rewritten in place, and the context block under the last user header.
local api = vim.api
local config = require("codecompanion_py.chat.config")
local shared = require("codecompanion_py.chat.shared")

local M = {}

M.ns = api.nvim_create_namespace("codecompanion_py") -- the chat's marks (hint, tokens, blocks)

local FOLD_AFTER = 3 -- shown blocks longer than this many lines are folded

---@param buf integer
---@return integer row 0-based, the last line's
---@return integer col the last line's length
function M.last_position(buf)
  local row = api.nvim_buf_line_count(buf) - 1
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  return row, #line
end

-- Append text at the end of the buffer. Windows whose cursor was on the last line keep
-- following the stream; a window where the user moved away is left alone. While a reply
-- streams the buffer is locked, so the end position is tracked here instead of reading
-- back an ever longer last line on every batch.
---@param chat CodeCompanionChat
---@param text string
function M.append(chat, text)
  local buf = chat.bufnr
  if text == "" or not api.nvim_buf_is_valid(buf) then
    return
  end
  local row, col
  if chat.status == "streaming" and chat.end_pos then
    row, col = chat.end_pos[1], chat.end_pos[2]
  else
    row, col = M.last_position(buf)
  end
  local followers = {}
  for _, win in ipairs(config.display().auto_scroll == false and {} or vim.fn.win_findbuf(buf)) do
    if api.nvim_win_get_cursor(win)[1] - 1 >= row then
      table.insert(followers, win)
    end
  end
  local lines = vim.split(text, "\n", { plain = true })
  vim.bo[buf].modifiable = true
  if #lines > 1 and lines[1] == "" then
    -- whole new lines: set below the last one, so a fold that ends there keeps its last line
    api.nvim_buf_set_lines(buf, row + 1, row + 1, false, vim.list_slice(lines, 2))
  else
    api.nvim_buf_set_text(buf, row, col, row, col, lines)
  end
  vim.bo[buf].modifiable = chat.status ~= "streaming"
  local end_row = row + #lines - 1
  chat.end_pos = { end_row, (#lines == 1 and col or 0) + #lines[#lines] }
  local extended = col + #lines[1] -- the length of the line the text went onto
  for _, win in ipairs(followers) do
    -- only when the row changes: placing the cursor on a long wrapped line costs time
    -- proportional to its length
    if api.nvim_win_get_cursor(win)[1] ~= end_row + 1 then
      local height = api.nvim_win_get_height(win)
      if end_row > row and end_row - row < height and extended > api.nvim_win_get_width(win) * height then
        -- That line fills the window alone, so the view starts below it: said outright, as
        -- Neovim would otherwise measure its whole wrapped height (3 ms for 70 KB) to find out.
        api.nvim_win_call(win, function() vim.fn.winrestview({ lnum = end_row + 1, col = 0, topline = row + 2 }) end)
      else
        api.nvim_win_set_cursor(win, { end_row + 1, 0 })
      end
    end
  end
end

-- Append text as a paragraph of its own: exactly one blank line before it.
---@param chat CodeCompanionChat
---@param text string
function M.paragraph(chat, text)
  local row, col = M.last_position(chat.bufnr)
  local above = row > 0 and api.nvim_buf_get_lines(chat.bufnr, row - 1, row, false)[1] or ""
  local gap = col > 0 and "\n\n" or (above ~= "" and "\n" or "")
  M.append(chat, gap .. text)
end

-- Replace lines (0-based, end exclusive) whether or not a reply streams.
---@param chat CodeCompanionChat
---@param first integer
---@param last integer
---@param lines string[]
function M.set_lines(chat, first, last, lines)
  local buf = chat.bufnr
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = chat.status ~= "streaming"
  chat.end_pos = nil -- the end may have moved: find it afresh
end

-- `lines` without the blank ones at either end (a message as the user would send it again).
---@param lines string[]
---@return string[]
function M.trimmed(lines)
  local first, last = 1, #lines
  while first <= last and vim.trim(lines[first]) == "" do
    first = first + 1
  end
  while last >= first and vim.trim(lines[last]) == "" do
    last = last - 1
  end
  return vim.list_slice(lines, first, last)
end

-- The turn is over (or never started): the buffer is the user's again.
---@param chat CodeCompanionChat
function M.unlock(chat)
  chat.status = "idle"
  chat.block = nil
  if api.nvim_buf_is_valid(chat.bufnr) then
    vim.bo[chat.bufnr].modifiable = true
  end
end

-- Fold rows first..last (0-based) in every window of the chat.
---@param chat CodeCompanionChat
---@param first integer
---@param last integer
function M.fold(chat, first, last)
  for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
    api.nvim_win_call(win, function()
      vim.wo[win].foldmethod = "manual"
      vim.cmd(("silent! %d,%dfold"):format(first + 1, last + 1))
    end)
  end
end

-- A fence longer than any backtick run in the text, so the text cannot close it early.
---@param text string
---@return string fence
function M.fence_for(text)
  local longest = 2
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", longest + 1)
end

-- Text that is one fenced block already (a bridge's tool output) is shown as it is.
local function is_fenced(text)
  local fence = text:match("^(```+)[^\n`]*\n")
  return fence ~= nil and text:sub(-#fence - 1) == "\n" .. fence
end

-- Show text in the chat (approval details, tool output), folding long blocks unless
-- `opts.fold` is false (what the user is asked to approve stays open).
---@param chat CodeCompanionChat
---@param text string
---@param title? string
---@param opts? { fold?: boolean }
function M.show(chat, text, title, opts)
  if title then
    M.paragraph(chat, title)
  end
  text = text:gsub("\n+$", "")
  local fence = not is_fenced(text) and M.fence_for(text)
  local body = fence and (fence .. "\n" .. text .. "\n" .. fence) or text
  M.paragraph(chat, body)
  local end_row = M.last_position(chat.bufnr)
  local start_row = end_row - select(2, body:gsub("\n", ""))
  if end_row - start_row > FOLD_AFTER and not (opts and opts.fold == false) then
    M.fold(chat, start_row, end_row)
  end
  chat.block = "block"
end

-- Blocks that stay in place and change as an agent reports progress (one per agent tool
-- call, and the plan): an extmark remembers where each starts.
---@param chat CodeCompanionChat
---@param key string
---@param lines string[]
function M.set_block(chat, key, lines)
  local buf = chat.bufnr
  chat.blocks = chat.blocks or {}
  local block = chat.blocks[key]
  local row = block and api.nvim_buf_get_extmark_by_id(buf, M.ns, block.mark, {})[1]
  if not row then
    M.paragraph(chat, table.concat(lines, "\n"))
    local first = M.last_position(buf) - #lines + 1
    -- left gravity: rewriting the block's lines in place must not push its mark below them
    chat.blocks[key] = { mark = api.nvim_buf_set_extmark(buf, M.ns, first, 0, { right_gravity = false }),
      count = #lines }
    return
  end
  M.set_lines(chat, row, row + block.count, lines)
  block.count = #lines
end

---@param buf integer
---@param row integer 0-based
function M.delete_marks_from(buf, row)
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, M.ns, { row, 0 }, -1, {})) do
    api.nvim_buf_del_extmark(buf, M.ns, mark[1])
  end
end

-- The row (1-based) of the last user header, or nil. It is near the end, so the buffer is
-- read backwards in slices, never whole: a long chat holds tens of thousands of lines.
---@param buf integer
---@return integer|nil
function M.last_header_row(buf)
  local header, stop = config.user_header(), api.nvim_buf_line_count(buf)
  while stop > 0 do
    local from = math.max(0, stop - 64)
    local slice = api.nvim_buf_get_lines(buf, from, stop, false)
    for i = #slice, 1, -1 do
      if slice[i] == header then
        return from + i
      end
    end
    stop = from
  end
end

-- The text after the last user header (`## Me`).
---@param buf integer
---@return string
function M.user_text(buf)
  local below = api.nvim_buf_get_lines(buf, M.last_header_row(buf) or 0, -1, false)
  return vim.trim(table.concat(below, "\n"))
end

-- Text below the last user header, as if the user had typed it there.
---@param chat CodeCompanionChat
---@param text string
function M.add_to_message(chat, text)
  local buf = chat.bufnr
  local last = api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ""
  local new = vim.split(text, "\n", { plain = true })
  if last ~= "" then
    table.insert(new, 1, "")
    if last ~= config.user_header() then
      table.insert(new, 1, "")
    end
  end
  api.nvim_buf_set_lines(buf, -1, -1, false, new)
  chat.end_pos = nil
end

-- The context block at the top of the user's message (chat/shared.lua), under the last header.
---@param chat CodeCompanionChat
function M.show_context(chat)
  local lines = shared.block_lines(chat)
  local buf = chat.bufnr
  if not api.nvim_buf_is_valid(buf) or (#lines == 0 and not chat.block_shown) then
    return -- nothing to show, and no block to take away: the buffer is not read at all
  end
  chat.block_shown = #lines > 0
  local header_row = M.last_header_row(buf)
  if not header_row then
    return
  end
  local all = api.nvim_buf_get_lines(buf, header_row - 1, -1, false)
  local base = header_row - 1 -- all[1] is the header; row numbers below are of `all`
  local first, last = 2, 2 -- 0-based: the line after the header's blank line
  if all[first + 1] == shared.HEADING then -- an older block: replaced
    last = first + 1
    while all[last + 1] and all[last + 1]:sub(1, 1) == ">" do
      last = last + 1
    end
    last = all[last + 1] == "" and last + 1 or last
  end
  if #lines > 0 then
    table.insert(lines, "")
  end
  api.nvim_buf_set_lines(buf, base + first, base + last, false, lines)
end

-- The windows showing the chat follow its end.
---@param buf integer
function M.go_to_end(buf)
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    api.nvim_win_set_cursor(win, { last, 0 })
  end
end

return M
