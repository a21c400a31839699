-- The chats: their registry, `apply(chat_id, ops)` (the one function the Python engine
-- calls to render: each op goes to its renderer in chat/render.lua), and what a chat does
-- with the engine: open, submit, stop, compact, change adapter. Making a chat is in
-- chat/open.lua, writing into its buffer in chat/buffer.lua, its keymaps' actions in
-- chat/actions.lua, CodeCompanion's chat object in chat/object.lua.
local api = vim.api
local rpc = require("codecompanion_py.rpc")
local config = require("codecompanion_py.chat.config")
local buffer = require("codecompanion_py.chat.buffer")
local render = require("codecompanion_py.chat.render")
local shared = require("codecompanion_py.chat.shared")
local window = require("codecompanion_py.chat.window")
local open = require("codecompanion_py.chat.open")
local words = require("codecompanion_py.words")

local M = {}

---@type table<integer, CodeCompanionChat> by buffer number (the chat id)
M.chats = {}
---@type integer|nil the buffer of the chat used last (Toggle and Add act on it)
M.last = nil

M.open, M.toggle, M.add, M.command, M.refresh_cache, M.changes = open.open, open.toggle, open.add, open.command,
  open.refresh_cache, open.changes
M.show = buffer.show
M.user_header = config.user_header

local unknown_reported = {}

-- The engine's ops for a chat; a string id ("inline:N", "cmd:N") is an inline request's, and
-- "completion" edit predictions'.
---@param chat_id integer|string|nil nil (vim.NIL) for events of no chat (an MCP server started by /mcp)
---@param ops table[]
function M.apply(chat_id, ops)
  if chat_id == "completion" then
    return require("codecompanion_py.completion").apply(ops)
  elseif type(chat_id) == "string" then
    return require("codecompanion_py.inline").apply(chat_id, ops)
  end
  if chat_id == nil or chat_id == vim.NIL then
    for _, op in ipairs(ops) do
      if op.op == "fire" then
        config.fire(op.event, type(op.data) == "table" and op.data or {})
      end
    end
    return
  end
  local chat = M.chats[chat_id]
  if not chat then
    return
  end
  for _, op in ipairs(ops) do
    local handler = render[op.op]
    if handler then
      handler(chat, op)
    elseif not unknown_reported[tostring(op.op)] then
      unknown_reported[tostring(op.op)] = true
      vim.notify(("CodeCompanion: the engine sent an unknown UI op %q; the Lua and Python parts of the plugin "
        .. "do not match (update both)"):format(tostring(op.op)), vim.log.levels.ERROR)
    end
  end
end

-- The op names Lua renders, the chat's, the inline assistant's and completion's (checked against the engine's list).
---@return string[]
function M.op_names()
  local names = vim.tbl_keys(render)
  local others = vim.list_extend(vim.list_slice(require("codecompanion_py.inline").op_names),
    require("codecompanion_py.completion").op_names)
  for _, name in ipairs(others) do
    if not render[name] then
      table.insert(names, name)
    end
  end
  return names
end

-- The engine's host ended (rpc.lua saw its job exit): each chat opens again in the next host, and
-- a chat that was waiting for a reply ends that turn with the reason and gets its buffer back.
---@param reason string
function M.engine_lost(reason)
  for _, chat in pairs(M.chats) do
    chat.engine_ready = false
    chat.opened = false
    if chat.status == "streaming" then
      render.done(chat, { status = "error", message = reason })
    end
  end
end

-- The chat is open in the engine (it said Ready), or its `chat.open` went in this same command
-- (`:CodeCompanionChat PROMPT` opens and submits: the channel keeps order, so it is sent once).
-- An open the engine refused is sent again with the next message.
---@param chat CodeCompanionChat
---@return boolean false when the engine cannot be reached
function M.open_in_engine(chat)
  if chat.engine_ready or chat.opened then
    return true
  end
  chat.opened = rpc.notify("chat.open", chat.open_payload)
  if chat.opened then
    vim.schedule(function() chat.opened = false end)
  end
  return chat.opened
end

local function refuse_while_streaming(chat)
  return require("codecompanion_py.chat.object").busy(chat, "a request is running; press q to stop it")
end

-- What the user typed under the last header, after callbacks and the prompt decorator (and
-- as typed, when decorated: a saved chat's title); nil when nothing goes.
local function message_of(chat)
  local text, listed = shared.split(buffer.user_text(chat.bufnr))
  if text == "" then
    return vim.notify("CodeCompanion: nothing to send", vim.log.levels.WARN)
  end
  if not config.run_callbacks(chat, "on_before_submit", { adapter = vim.deepcopy(chat.adapter) }) then
    return M.restore(chat.bufnr) -- a callback said no: the message stays, to edit and send again
  end
  local decorate = config.opts().prompt_decorator
  if type(decorate) == "function" then
    local ok, result = pcall(decorate, text, vim.deepcopy(chat.adapter), chat.context)
    if not ok or type(result) ~= "string" then
      return vim.notify("CodeCompanion: interactions.chat.opts.prompt_decorator failed: " .. tostring(result),
        vim.log.levels.ERROR)
    end
    return result, listed, text
  end
  return text, listed
end

-- The buffer is locked while the engine answers.
local function lock(chat)
  chat.status = "streaming"
  chat.turn_started = false
  chat.end_pos = nil -- the user typed since the last reply: find the end afresh
  vim.bo[chat.bufnr].modifiable = false
end

-- <CR>: the message under the last header, with the context it names, to the engine.
---@param buf integer
function M.submit(buf)
  local chat = M.chats[buf]
  if not chat or refuse_while_streaming(chat) then
    return
  end
  local text, listed, typed = message_of(chat)
  if not text then
    return
  end
  local removed = shared.removed(chat, listed)
  local context, problems = shared.collect(chat, text, config.opts().max_context_chars, removed)
  if #problems > 0 then -- the user meant to share it: say why not, and keep the message
    return vim.notify("CodeCompanion: not sent: " .. table.concat(problems, "; "), vim.log.levels.WARN)
  end
  if not M.open_in_engine(chat) then
    return -- a failed open is retried with the next submit
  end
  local review = require("codecompanion_py.code_review")
  text = review.replace(text, context)
  local payload = { chat_id = buf, text = text, settings = require("codecompanion_py.chat.settings").read(buf),
    context = vim.tbl_map(shared.wire, context), removed = removed, typed = typed, hooks = chat.open_payload.hooks,
    header = require("codecompanion_py.chat.rewind").current_header(buf) }
  if not rpc.notify("chat.submit", payload) then
    return
  end
  shared.commit(chat, context, removed)
  lock(chat)
  review.sent(context, chat)
  config.fire("ChatSubmitted", { bufnr = buf, id = buf })
  config.run_callbacks(chat, "on_submitted", { payload = { text = text } })
end

-- `/compact`: the engine summarises the earlier turns now, as a turn of its own.
---@param chat CodeCompanionChat
function M.compact(chat)
  if refuse_while_streaming(chat) then
    return
  end
  if shared.split(buffer.user_text(chat.bufnr)) ~= "" then
    return vim.notify("CodeCompanion: send or clear your message first, then /compact", vim.log.levels.WARN)
  end
  if M.open_in_engine(chat) and rpc.notify("chat.compact", { chat_id = chat.bufnr }) then
    lock(chat)
  end
end

-- The buffer back to editable after a submit that did not go (CodeCompanion's chat:restore()).
---@param buf integer
function M.restore(buf)
  local chat = M.chats[buf]
  if chat then
    buffer.unlock(chat)
    config.fire("ChatRestored", { bufnr = buf, id = buf })
  end
end

---@param buf integer
function M.stop(buf)
  local chat = M.chats[buf]
  if chat and chat.status == "streaming" then
    rpc.notify("chat.stop", { chat_id = buf })
  end
end

-- <C-c>: the chat is gone (its request stopped, its buffer wiped, the engine's session closed).
---@param buf integer
function M.close(buf)
  if M.chats[buf] then
    M.stop(buf)
    pcall(api.nvim_buf_delete, buf, { force = true }) -- BufWipeout does the rest
  end
end

-- `ga`: pick an adapter, then one of its models (listed by the provider, fetched by the
-- engine without blocking: the `choose_model` op), through vim.ui.select so any picker
-- plugin styles them. The chat keeps its history; the next request goes to the new adapter.
---@param buf integer
function M.change_adapter(buf)
  local chat = M.chats[buf]
  if not chat or chat.status == "streaming" then
    return
  end
  local ok, names = pcall(rpc.request, "adapters")
  if not ok then
    return vim.notify("CodeCompanion: " .. tostring(names), vim.log.levels.ERROR)
  end
  vim.ui.select(names, { prompt = "Adapter (now " .. (chat.adapter.name or "?") .. ")" }, function(name)
    if name then
      rpc.notify("chat.models", { chat_id = buf, adapter = name })
    end
  end)
end

-- <C-_> or <C-x><C-o> in the chat: `#{` editor context, `@{` tools and groups, and after `\`
-- an agent's slash commands.
---@param findstart integer
---@param base string
---@return integer|table[]
function M.omnifunc(findstart, base)
  local completion = require("codecompanion_py.chat.completion")
  if findstart == 1 then
    local start = completion.start(api.nvim_get_current_line():sub(1, api.nvim_win_get_cursor(0)[2]))
    return start and start - 1 or -3
  end
  local items = completion.items(M.chats[api.nvim_get_current_buf()], base)
  for _, item in ipairs(items) do
    item.group = nil
  end
  return items
end

-- Rule groups into a chat (when it opens, and /rules): listed in its context block, sent
-- with its next message.
---@param chat CodeCompanionChat
---@param names string[]
---@return table[] items
function M.load_rules(chat, names)
  local items, problems = require("codecompanion_py.chat.rules").load(config.all(), names)
  if #problems > 0 then
    vim.notify("CodeCompanion: rules: " .. table.concat(problems, "; "), vim.log.levels.WARN)
  end
  shared.add_pending(chat, items)
  buffer.show_context(chat)
  return items
end

-- `gM` (kind "rules"), or any kind: the chat forgets those items and what they sent.
---@param chat CodeCompanionChat
---@param kind string
function M.remove_context(chat, kind)
  local ids = {}
  for _, item in ipairs(chat.shared or {}) do
    if item.kind == kind or item.id:match("^<" .. kind .. ">") then
      table.insert(ids, item.id)
    end
  end
  if #ids == 0 then
    return vim.notify("CodeCompanion: this chat has no " .. kind)
  end
  shared.remove(chat, ids)
  if chat.engine_ready then
    rpc.notify("chat.remove_context", { chat_id = chat.bufnr, ids = ids })
  end
  if vim.bo[chat.bufnr].modifiable then
    buffer.show_context(chat)
  end
  vim.notify(("CodeCompanion: removed %s from the chat"):format(words.count(#ids, (kind:gsub("s$", "")))))
end

-- The chats, oldest first.
---@return CodeCompanionChat[]
function M.list()
  local list = vim.tbl_values(M.chats)
  table.sort(list, function(a, b) return a.bufnr < b.bufnr end)
  return list
end

---@return CodeCompanionChat|nil the chat used last, else the newest
function M.last_chat()
  local list = M.list()
  return M.last and M.chats[M.last] or list[#list]
end

-- Show a chat that exists: focus its window in this tab, or take the window of the chat shown
-- in it, or open one.
---@param chat CodeCompanionChat
---@param window_opts? table `display.chat.window` for this window
---@return integer win
function M.show_chat(chat, window_opts)
  M.last = chat.bufnr
  local wins = window.windows(chat.bufnr)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    return wins[1]
  end
  local cfg = config.all()
  if window_opts then
    cfg = vim.tbl_deep_extend("force", cfg, { display = { chat = { window = window_opts } } })
  end
  local reuse = window.reusable(cfg, function(buf) return M.chats[buf] ~= nil end)
  local replaced = reuse and api.nvim_win_get_buf(reuse)
  for buf, other in pairs(M.chats) do -- one chat window a tab, never one more split: the others hide
    if buf == replaced then
      config.fire("ChatHidden", { bufnr = buf, id = buf })
    else
      M.hide(other)
    end
  end
  local win = window.open(chat.bufnr, cfg, reuse)
  -- Set in each new window, as CodeCompanion does: an ftplugin's `setlocal` is this window's.
  vim.bo[chat.bufnr].filetype = "codecompanion"
  pcall(api.nvim_win_set_cursor, win, { api.nvim_buf_line_count(chat.bufnr), 0 })
  config.fire("ChatOpened", { bufnr = chat.bufnr, id = chat.bufnr })
  return win
end

---@param chat CodeCompanionChat
function M.hide(chat)
  if window.visible(chat.bufnr) then
    window.hide(chat.bufnr)
    config.fire("ChatHidden", { bufnr = chat.bufnr, id = chat.bufnr })
  end
end

return M
