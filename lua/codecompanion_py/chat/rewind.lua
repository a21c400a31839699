-- Rewinding a chat to before one of its turns: `gz` on a `## Me`, `/rewind` (a list of the
-- turns), `require("codecompanion").rewind({ bufnr, turn })`. A turn is named by its `## Me`
-- counted from the top (the engine took a checkpoint of the worktree before each message was
-- sent). The engine puts the files back and asks about each file the user changed since
-- (`ask_conflicts`); this side reloads the buffers, cuts the conversation and says what was done.
local api = vim.api
local rpc = require("codecompanion_py.rpc")
local config = require("codecompanion_py.chat.config")
local buffer = require("codecompanion_py.chat.buffer")

local M = {}

-- The rows (1-based) of the chat's `## Me` headers, top to bottom.
local function headers(buf)
  local rows, header = {}, config.user_header()
  for i, line in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line == header then
      table.insert(rows, i)
    end
  end
  return rows
end

-- Which `## Me` a message sent now is written under (the last): sent with `chat.submit`.
---@param buf integer
---@return integer
function M.current_header(buf)
  return #headers(buf)
end

local CHOICES = { "Restore files and conversation", "Restore files only", "Restore the conversation only" }
local RESTORE = { "all", "files", "conversation" }

-- Files open with unsaved changes: the engine asks about those rather than overwrite them.
local function dirty()
  local out = {}
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and vim.bo[b].modified and vim.bo[b].buftype == "" then
      table.insert(out, vim.uv.fs_realpath(api.nvim_buf_get_name(b)) or api.nvim_buf_get_name(b))
    end
  end
  return out
end

-- Back to before the message sent under the chat's `turn`th `## Me`; `restore` is asked when nil.
---@param buf integer the chat buffer
---@param turn integer
---@param restore? "all"|"files"|"conversation"
function M.to(buf, turn, restore)
  local chat = require("codecompanion_py.chat").chats[buf]
  if not chat or require("codecompanion_py.chat.object").busy(chat, "wait for the reply (or press q) to rewind") then
    return
  end
  local function go(choice)
    rpc.notify("chat.rewind", { chat_id = buf, header = turn, restore = choice, dirty = dirty() })
  end
  if restore then
    return go(restore)
  end
  vim.ui.select(CHOICES, { prompt = ("Rewind to before message %d"):format(turn) }, function(choice, i)
    if choice then
      go(RESTORE[i])
    end
  end)
end

-- `gz`: the message under the cursor (its `## Me`, or the nearest one above).
---@param chat CodeCompanionChat
function M.at_cursor(chat)
  local row, turn = api.nvim_win_get_cursor(0)[1], nil
  for n, at in ipairs(headers(chat.bufnr)) do
    if at > row then
      break
    end
    turn = n
  end
  if not turn then
    return vim.notify("CodeCompanion: put the cursor on one of your messages (## Me) to rewind to before it",
      vim.log.levels.WARN)
  end
  M.to(chat.bufnr, turn)
end

-- `/rewind` (and `rewind()` without a turn): the chat's checkpoints, newest first, to pick one.
---@param chat CodeCompanionChat
function M.pick(chat)
  local ok, turns = pcall(rpc.request, "chat.checkpoints", { chat_id = chat.bufnr })
  if not ok or type(turns) ~= "table" or #turns == 0 then
    return vim.notify("CodeCompanion: " .. (ok and "this chat has no checkpoints yet" or tostring(turns)),
      vim.log.levels.WARN)
  end
  local labels = vim.tbl_map(function(t) return ("%d. %s (%s)"):format(t.header, t.text, os.date("%H:%M", t.at)) end,
    turns)
  vim.ui.select(labels, { prompt = "Rewind to before" }, function(choice, i)
    if choice then
      M.to(chat.bufnr, turns[i].header)
    end
  end)
end

local ASK = { "Keep mine", "Take the checkpoint's", "View the diff" }
local ANSWER = { "mine", "checkpoint", "diff" }

-- The file beside the checkpoint's text, in a tab of their own, as a diff.
local function show_diff(file)
  vim.cmd("tabnew " .. vim.fn.fnameescape(file.path))
  local scratch = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(scratch, 0, -1, false, vim.split(file.checkpoint or "", "\n", { plain = true }))
  vim.bo[scratch].filetype = vim.bo.filetype
  api.nvim_buf_set_name(scratch, "checkpoint://" .. file.relative)
  vim.cmd("diffthis | vsplit | buffer " .. scratch .. " | diffthis")
  return api.nvim_get_current_tabpage()
end

-- The engine's question: for each file changed since the checkpoint by someone else than the
-- LLM, keep it or take the checkpoint's (a diff first, if wanted). Cancelling cancels the rewind.
---@param args { files: { path: string, relative: string, checkpoint?: string }[] }
---@param reply fun(answer: table)
function M.ask_conflicts(args, reply)
  local choices, files = {}, args.files or {}
  local function ask(i, tab)
    local file = files[i]
    if not file then
      return reply({ choices = choices })
    end
    vim.ui.select(ASK, { prompt = ("%s changed since the checkpoint"):format(file.relative) }, function(choice, n)
      if tab and api.nvim_tabpage_is_valid(tab) then
        vim.cmd("tabclose " .. api.nvim_tabpage_get_number(tab))
      end
      if not choice then
        return reply({ cancel = true })
      elseif ANSWER[n] == "diff" then
        return ask(i, show_diff(file))
      end
      choices[file.relative] = ANSWER[n]
      ask(i + 1)
    end)
  end
  ask(1)
end

local function say(files)
  local by = { restored = {}, removed = {}, kept = {} }
  for _, file in ipairs(files or {}) do
    table.insert(by[file.action], "`" .. file.relative .. "`")
  end
  local parts = {}
  for _, what in ipairs({ "restored", "removed" }) do
    if #by[what] > 0 then
      table.insert(parts, what .. " " .. table.concat(by[what], ", "))
    end
  end
  if #by.kept > 0 then
    table.insert(parts, "kept yours: " .. table.concat(by.kept, ", "))
  end
  return #parts > 0 and table.concat(parts, "; ") or "no file had changed"
end

-- The `rewound` op: buffers of the files reload (one undo step each, by 'undoreload': `u` gives
-- back what the buffer held, unsaved changes too), the
-- conversation from that message on leaves the chat (the message comes back to be sent again),
-- and the chat says what was done.
---@param chat CodeCompanionChat
---@param op { header: integer, conversation: boolean, files?: { path: string, relative: string, action: string }[] }
function M.rewound(chat, op)
  local buf = chat.bufnr
  for _, file in ipairs(op.files or {}) do
    local b = require("codecompanion_py.editor").find_buffer(file.path)
    if file.action ~= "kept" and b then -- unsaved changes were asked about: taking the checkpoint's drops them
      api.nvim_buf_call(b, function() vim.cmd("silent! edit!") end)
    end
  end
  local rows, header = headers(buf), config.user_header()
  local row, note = rows[#rows], "> **Rewound** to before message " .. op.header .. ": " ..
    (op.files and #op.files > 0 and say(op.files) or (op.conversation and "the conversation" or say({})))
  if op.conversation and rows[op.header] then
    row = rows[op.header]
    local draft = {} -- the message, to send again: its lines up to the reply's header
    for _, line in ipairs(api.nvim_buf_get_lines(buf, row, rows[op.header + 1] or -1, false)) do
      if line:match("^## ") then
        break
      end
      table.insert(draft, line)
    end
    draft = buffer.trimmed(draft)
    buffer.delete_marks_from(buf, row - 1)
    chat.blocks, chat.block = {}, nil
    chat.shared, chat.shared_pending = {}, nil -- what the context sent is gone with the turns
    buffer.set_lines(chat, row - 1, -1, vim.list_extend({ note, "", header, "" }, draft))
  else
    buffer.set_lines(chat, row - 1, row - 1, { note, "" })
  end
  config.fire("ChatRewound", { bufnr = buf, id = buf, turn = op.header, conversation = op.conversation,
    files = vim.tbl_map(function(f) return f.relative end, op.files or {}) })
end

return M
