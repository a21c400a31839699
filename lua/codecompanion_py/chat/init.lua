-- The chat buffer: window, keymaps, submit/stop, and `apply(chat_id, ops)`, the one
-- function the Python engine calls to render. Ops arrive batched; each has a `render`
-- function below named after its tag, and `codecompanion_py/ui/ops.py` defines their
-- fields (an absent field is nil, never vim.NIL).
local api = vim.api
local rpc = require("codecompanion_py.rpc")
-- What needs the engine beyond sending (regenerate, clear, debug view, system prompt,
-- settings header): its functions, and the renderers of its ops.
local actions = require("codecompanion_py.chat.actions")
local shared = require("codecompanion_py.chat.shared")
local highlight = require("codecompanion_py.chat.highlight")

local M = {}

local ns = api.nvim_create_namespace("codecompanion_py")

---@type table<integer, table> chat state by buffer number (the chat id)
M.chats = {}

local function fire(event, data)
  api.nvim_exec_autocmds("User", { pattern = "CodeCompanion" .. event, modeline = false, data = data })
end

local function config()
  return require("codecompanion_py").config
end

local function display()
  return config().display.chat or {}
end

-- `interactions.chat.<key>` (or the older `strategies.chat.<key>`).
local function chat_config(key)
  return require("codecompanion_py").chat_option(key)
end

local function chat_opts()
  return chat_config("opts") or {}
end

-- The headers of the turns, from `interactions.chat.roles` (CodeCompanion's defaults:
-- "Me" and "CodeCompanion (<adapter>)"; `llm` may be a function of the adapter).
local function user_header()
  local roles = chat_config("roles") or {}
  return "## " .. (type(roles.user) == "string" and roles.user or "Me")
end

local function llm_header(adapter)
  local roles = chat_config("roles") or {}
  local name = roles.llm
  if type(name) == "function" then
    local ok, result = pcall(name, adapter)
    name = ok and result or nil
  end
  if type(name) ~= "string" then
    name = ("CodeCompanion (%s)"):format(adapter.formatted_name or adapter.name)
  end
  return "## " .. name
end
M.user_header = user_header

-- Run the chat's callbacks for `event` (CodeCompanion's on_created, on_before_submit, ...):
-- those of `interactions.chat.callbacks` and those added with chat:add_callback(). Returns
-- false when one of them returned false.
local function run_callbacks(chat, event, info)
  local go_on = true
  for _, fn in ipairs(chat.callbacks and chat.callbacks[event] or {}) do
    local ok, result = pcall(fn, chat, info)
    if not ok then
      vim.notify(("CodeCompanion: callback %s failed: %s"):format(event, result), vim.log.levels.ERROR)
    elseif result == false then
      go_on = false
    end
  end
  return go_on
end

local function last_position(buf)
  local row = api.nvim_buf_line_count(buf) - 1
  local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  return row, #line
end

-- Append text at the end of the buffer. Windows whose cursor was on the last line keep
-- following the stream; a window where the user moved away is left alone. While a reply
-- streams the buffer is locked, so the end position is tracked here instead of reading
-- back an ever longer last line on every batch.
local function append(chat, text)
  local buf = chat.bufnr
  if text == "" or not api.nvim_buf_is_valid(buf) then
    return
  end
  local row, col
  if chat.status == "streaming" and chat.end_pos then
    row, col = chat.end_pos[1], chat.end_pos[2]
  else
    row, col = last_position(buf)
  end
  local followers = {}
  for _, win in ipairs(display().auto_scroll == false and {} or vim.fn.win_findbuf(buf)) do
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
local function paragraph(chat, text)
  local row, col = last_position(chat.bufnr)
  local above = row > 0 and api.nvim_buf_get_lines(chat.bufnr, row - 1, row, false)[1] or ""
  local gap = col > 0 and "\n\n" or (above ~= "" and "\n" or "")
  append(chat, gap .. text)
end

-- Text that follows a block (a tool line, a plan, shown output) starts a paragraph of its
-- own: glued to the block's last line it would end up in a fence or on the tool line.
local function after_block(chat)
  if chat.block == "block" then
    paragraph(chat, "")
    chat.block = nil
  end
end

local function unlock(chat)
  chat.status = "idle"
  chat.block = nil
  if api.nvim_buf_is_valid(chat.bufnr) then
    vim.bo[chat.bufnr].modifiable = true
  end
end

local render = {}
local show_shared -- the context block (below)

-- The row (1-based) of the last user header, or nil. It is near the end, so the buffer is
-- read backwards in slices, never whole: a long chat holds tens of thousands of lines.
local function last_header_row(buf)
  local header, stop = user_header(), api.nvim_buf_line_count(buf)
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

function render.ready(chat, op)
  if chat.engine_ready and chat.adapter.model ~= nil and
      (chat.adapter.name ~= op.adapter.name or chat.adapter.model ~= op.adapter.model) then
    vim.notify(("CodeCompanion: now using %s (%s)"):format(op.adapter.formatted_name, op.adapter.model or "default"))
  end
  chat.adapter = op.adapter
  chat.engine_ready = true
  -- What a new engine (after this one stopped) opens the chat with: the adapter it has now,
  -- and the saved chat it writes to, which holds the conversation.
  local payload = chat.open_payload
  payload.adapter, payload.model = op.adapter.name, op.adapter.model
  payload.resume_id = op.saved_id or payload.resume_id
end

function render.begin(chat, op)
  chat.adapter = op.adapter
  chat.block = nil
  chat.turn_started = true
  if not op.continued then
    chat.blocks = {}
  end
  if op.continued then -- the LLM goes on after tool results, in the same reply
    append(chat, "\n\n")
    return
  end
  append(chat, "\n\n" .. llm_header(op.adapter) .. "\n\n")
end

function render.reasoning(chat, op)
  if display().show_reasoning == false then
    return
  end
  after_block(chat)
  if chat.block ~= "reasoning" then
    append(chat, "### Reasoning\n\n")
    chat.block = "reasoning"
    chat.reasoning_row = select(1, last_position(chat.bufnr)) - 1
  end
  append(chat, op.text)
end

-- `display.chat.fold_reasoning` (default on): the reasoning folds once the answer starts.
local function fold_reasoning(chat)
  local first, last = chat.reasoning_row, select(1, last_position(chat.bufnr)) - 2
  if display().fold_reasoning == false or not first or last <= first then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
    api.nvim_win_call(win, function()
      vim.wo[win].foldmethod = "manual"
      vim.cmd(("silent! %d,%dfold"):format(first + 1, last + 1))
    end)
  end
end

function render.text(chat, op)
  after_block(chat)
  if chat.block == "reasoning" then
    append(chat, "\n\n### Response\n\n")
    fold_reasoning(chat)
  end
  chat.block = "text"
  append(chat, op.text)
end

function render.tool_call(chat, op)
  local args = op.arguments
  if type(args) ~= "table" or vim.tbl_isempty(args) then
    args = vim.empty_dict()
  end
  paragraph(chat, ("**Tool call** `%s` `%s`"):format(op.name, vim.json.encode(args)))
  chat.block = "block"
end

local STATUS_MARK = { success = "✓", error = "✗", rejected = "✗ rejected", cancelled = "⊘ cancelled" }
local STATUS_ICON = { success = "tool_success", error = "tool_failure" } -- display.chat.icons
local FOLD_AFTER = 3 -- outputs longer than this many lines are folded

-- A fence longer than any backtick run in the text, so output cannot close it early.
local function fenced(text)
  local longest = 2
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  local fence = string.rep("`", longest + 1)
  return fence .. "\n" .. text .. "\n" .. fence
end

-- Text that is one fenced block already (a bridge's tool output) is shown as it is.
local function is_fenced(text)
  local fence = text:match("^(```+)[^\n`]*\n")
  return fence ~= nil and text:sub(-#fence - 1) == "\n" .. fence
end

-- Show text in the chat (approval details, tool output), folding long blocks unless
-- `opts.fold` is false (what the user is asked to approve stays open).
function M.show(chat, text, title, opts)
  if title then
    paragraph(chat, title)
  end
  text = text:gsub("\n+$", "")
  local body = is_fenced(text) and text or fenced(text)
  paragraph(chat, body)
  local end_row = select(1, last_position(chat.bufnr))
  local start_row = end_row - select(2, body:gsub("\n", ""))
  if end_row - start_row > FOLD_AFTER and not (opts and opts.fold == false) then
    for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
      api.nvim_win_call(win, function()
        vim.wo[win].foldmethod = "manual"
        vim.cmd(("silent! %d,%dfold"):format(start_row + 1, end_row + 1))
      end)
    end
  end
  chat.block = "block"
end

function render.tool_output(chat, op)
  local icons = display().icons or {}
  local mark = icons[STATUS_ICON[op.status] or ""] or STATUS_MARK[op.status] or op.status
  M.show(chat, op.text or "", ("**Tool** `%s` %s"):format(op.name, vim.trim(mark)))
end

-- Blocks that stay in place and change as an agent reports progress: one line per agent
-- tool call, and the plan. An extmark remembers where each block starts.
local function set_block(chat, key, lines)
  local buf = chat.bufnr
  chat.blocks = chat.blocks or {}
  local block = chat.blocks[key]
  local row = block and api.nvim_buf_get_extmark_by_id(buf, ns, block.mark, {})[1]
  if not row then
    paragraph(chat, table.concat(lines, "\n"))
    local first = select(1, last_position(buf)) - #lines + 1
    -- left gravity: rewriting the block's lines in place must not push its mark below them
    chat.blocks[key] = { mark = api.nvim_buf_set_extmark(buf, ns, first, 0, { right_gravity = false }), count = #lines }
    return
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, row, row + block.count, false, lines)
  vim.bo[buf].modifiable = chat.status ~= "streaming"
  block.count = #lines
  chat.end_pos = nil -- the end may have moved: find it afresh
end

local AGENT_STATUS = { pending = "○", in_progress = "◐", completed = "✓", failed = "✗" }

function render.agent_tool(chat, op)
  local lines = { ("**Tool** %s %s"):format(AGENT_STATUS[op.status] or "○", op.title or op.id) }
  for _, location in ipairs(type(op.locations) == "table" and op.locations or {}) do
    local line = type(location.line) == "number" and (":" .. location.line) or ""
    table.insert(lines, ("  ↳ `%s%s`"):format(location.path, line))
  end
  set_block(chat, "tool:" .. op.id, lines)
  chat.block = "block"
end

local PLAN_MARK = { completed = "[x]", in_progress = "[~]", pending = "[ ]" }

function render.plan(chat, op)
  local lines = { "**Plan**", "" }
  for _, entry in ipairs(op.entries or {}) do
    table.insert(lines, ("- %s %s"):format(PLAN_MARK[entry.status] or "[ ]", (entry.content or ""):gsub("\n", " ")))
  end
  set_block(chat, "plan", lines)
  chat.block = "block"
end

function render.show(chat, op)
  M.show(chat, op.text or "", op.title)
end

function render.call(chat, op)
  require("codecompanion_py.editor").handle(chat, op)
end

-- `display.chat.show_tools_processing` (default on): a line at the end of the chat while tools run.
local function tools_processing(chat, running)
  if chat.tools_mark then
    pcall(api.nvim_buf_del_extmark, chat.bufnr, ns, chat.tools_mark)
    chat.tools_mark = nil
  end
  if running and display().show_tools_processing ~= false then
    local row = select(1, last_position(chat.bufnr))
    chat.tools_mark = api.nvim_buf_set_extmark(chat.bufnr, ns, row, 0, {
      virt_lines = { { { "Tools processing ...", "Comment" } } },
    })
  end
end

function render.fire(chat, op)
  local data = type(op.data) == "table" and op.data or {}
  data.bufnr = chat.bufnr
  if op.event == "ToolsStarted" or op.event == "ToolsFinished" then
    tools_processing(chat, op.event == "ToolsStarted")
  end
  fire(op.event, data)
end

function render.error(chat, op)
  vim.notify("CodeCompanion: " .. op.message, vim.log.levels.ERROR)
  if chat.status == "streaming" and not chat.turn_started then
    unlock(chat) -- the submit never reached a request: give the buffer back
  end
end

function render.done(chat, op)
  local buf = chat.bufnr
  if op.status == "empty" then
    unlock(chat)
    return
  end
  if op.status == "error" and op.message then
    append(chat, "\n\n> **Error:** " .. op.message:gsub("\n", " "))
  end
  local row = last_position(buf)
  local virt = {}
  if op.status == "stopped" then
    table.insert(virt, { " (stopped)", "WarningMsg" })
  end
  if op.tokens and display().show_token_count ~= false then
    local shown = (" (%d tokens)"):format(op.tokens)
    if type(display().token_count) == "function" then -- CodeCompanion's formatter: (tokens, adapter)
      local ok, text = pcall(display().token_count, op.tokens, vim.deepcopy(chat.adapter))
      shown = ok and type(text) == "string" and text or shown
    end
    table.insert(virt, { shown, "Comment" })
  end
  if #virt > 0 then
    api.nvim_buf_set_extmark(buf, ns, row, 0, { virt_text = virt, virt_text_pos = "eol" })
  end
  chat.status = "idle"
  chat.turn_started = false
  tools_processing(chat, false)
  append(chat, "\n\n" .. user_header() .. "\n\n")
  -- the finished turn leaves the region that is parsed again (seal checks the header's row)
  highlight.seal(buf, api.nvim_buf_line_count(buf) - 3)
  unlock(chat)
  show_shared(chat)
  fire(op.status == "stopped" and "ChatStopped" or "ChatDone",
    { bufnr = buf, id = buf, status = op.status, tokens = op.tokens })
  if op.status == "stopped" then
    run_callbacks(chat, "on_cancelled")
  end
  run_callbacks(chat, "on_completed", { status = op.status })
  run_callbacks(chat, "on_ready")
end

local unknown_reported = {}

function M.apply(chat_id, ops)
  if type(chat_id) == "string" then -- "inline:N", "cmd:N": the inline assistant's requests
    return require("codecompanion_py.inline").apply(chat_id, ops)
  end
  if chat_id == nil or chat_id == vim.NIL then -- of no chat (an MCP server started by /mcp): events only
    for _, op in ipairs(ops) do
      if op.op == "fire" then
        fire(op.event, type(op.data) == "table" and op.data or {})
      end
    end
    return
  end
  local chat = M.chats[chat_id]
  if not chat then
    return
  end
  for _, op in ipairs(ops) do
    local handler = render[op.op] or actions.render[op.op]
    if handler then
      handler(chat, op)
    elseif not unknown_reported[tostring(op.op)] then
      unknown_reported[tostring(op.op)] = true
      vim.notify(("CodeCompanion: the engine sent an unknown UI op %q; the Lua and Python parts of the plugin "
        .. "do not match (update both)"):format(tostring(op.op)), vim.log.levels.ERROR)
    end
  end
end

-- The engine's host ended (rpc.lua saw its job exit): each chat opens again in the next host, and
-- a chat that was waiting for a reply ends that turn with the reason and gets its buffer back.
function M.engine_lost(reason)
  for _, chat in pairs(M.chats) do
    chat.engine_ready = false
    chat.opened = false
    if chat.status == "streaming" then
      render.done(chat, { status = "error", message = reason })
    end
  end
end

-- The op names this file renders (checked against the engine's list by the tests).
function M.op_names()
  local names = vim.list_extend(vim.tbl_keys(render), vim.tbl_keys(actions.render))
  for _, name in ipairs(require("codecompanion_py.inline").op_names) do
    if not vim.tbl_contains(names, name) then
      table.insert(names, name)
    end
  end
  return names
end

-- The context block at the top of the user's message (chat/shared.lua), under the last header.
show_shared = function(chat)
  local lines = shared.block_lines(chat)
  local buf = chat.bufnr
  if not api.nvim_buf_is_valid(buf) or (#lines == 0 and not chat.block_shown) then
    return -- nothing to show, and no block to take away: the buffer is not read at all
  end
  chat.block_shown = #lines > 0
  local header, header_row = user_header(), last_header_row(buf)
  if header_row then
    local all = api.nvim_buf_get_lines(buf, header_row - 1, -1, false)
    local base = header_row - 1 -- all[1] is the header; row numbers below are of `all`
    local row = 1
    if all[row] == header then
      local first, last = row + 1, row + 1 -- 0-based: the line after the header's blank line
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
  end
end

-- `gM` (kind "rules"), or any kind: the chat forgets those items and what they sent.
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
    show_shared(chat)
  end
  vim.notify(("CodeCompanion: removed %d %s from the chat"):format(#ids, kind))
end

-- The chat is open in the engine (it said Ready), or its `chat.open` went in this same command
-- (`:CodeCompanionChat PROMPT` opens and submits: the channel keeps order, so it is sent once).
-- An open the engine refused is sent again with the next message. False when the engine cannot
-- be reached.
local function open_in_engine(chat)
  if chat.engine_ready or chat.opened then
    return true
  end
  chat.opened = rpc.notify("chat.open", chat.open_payload)
  if chat.opened then
    vim.schedule(function() chat.opened = false end)
  end
  return chat.opened
end

-- The text after the last user header (`## Me`).
local function user_text(buf)
  local below = api.nvim_buf_get_lines(buf, last_header_row(buf) or 0, -1, false)
  return vim.trim(table.concat(below, "\n"))
end

function M.submit(buf)
  local chat = M.chats[buf]
  if not chat then
    return
  end
  if chat.status == "streaming" then
    vim.notify("CodeCompanion: a request is running; press q to stop it", vim.log.levels.WARN)
    return
  end
  local text, listed = shared.split(user_text(buf))
  if text == "" then
    vim.notify("CodeCompanion: nothing to send", vim.log.levels.WARN)
    return
  end
  if not run_callbacks(chat, "on_before_submit", { adapter = vim.deepcopy(chat.adapter) }) then
    return M.restore(buf) -- a callback said no: the message stays, to edit and send again
  end
  local decorate = chat_opts().prompt_decorator
  if type(decorate) == "function" then
    local ok, result = pcall(decorate, text, vim.deepcopy(chat.adapter), chat.context)
    if not ok or type(result) ~= "string" then
      vim.notify("CodeCompanion: interactions.chat.opts.prompt_decorator failed: " .. tostring(result),
        vim.log.levels.ERROR)
      return
    end
    text = result
  end
  local removed = shared.removed(chat, listed)
  local context, problems = shared.collect(chat, text, chat_opts().max_context_chars, removed)
  if #problems > 0 then -- the user meant to share it: say why not, and keep the message
    return vim.notify("CodeCompanion: not sent: " .. table.concat(problems, "; "), vim.log.levels.WARN)
  end
  if not open_in_engine(chat) then
    return -- a failed open is retried with the next submit
  end
  local payload = { chat_id = buf, text = text, settings = actions.read_settings(buf),
    context = vim.tbl_map(shared.wire, context), removed = removed }
  if not rpc.notify("chat.submit", payload) then
    return
  end
  shared.commit(chat, context, removed)
  chat.status = "streaming"
  chat.turn_started = false
  chat.end_pos = nil -- the user typed since the last reply: find the end afresh
  vim.bo[buf].modifiable = false
  fire("ChatSubmitted", { bufnr = buf, id = buf })
  run_callbacks(chat, "on_submitted", { payload = { text = text } })
end

-- `/compact`: the engine summarises the earlier turns now, as a turn of its own.
function M.compact(chat)
  if chat.status == "streaming" then
    return vim.notify("CodeCompanion: a request is running; press q to stop it", vim.log.levels.WARN)
  end
  local typed = shared.split(user_text(chat.bufnr))
  if typed ~= "" then
    return vim.notify("CodeCompanion: send or clear your message first, then /compact", vim.log.levels.WARN)
  end
  if not open_in_engine(chat) then
    return
  end
  if rpc.notify("chat.compact", { chat_id = chat.bufnr }) then
    chat.status, chat.turn_started, chat.end_pos = "streaming", false, nil
    vim.bo[chat.bufnr].modifiable = false
  end
end

-- The buffer back to editable after a submit that did not go (CodeCompanion's chat:restore()).
function M.restore(buf)
  local chat = M.chats[buf]
  if not chat then
    return
  end
  unlock(chat)
  fire("ChatRestored", { bufnr = buf, id = buf })
end

-- `ga`: pick an adapter, then one of its models (listed by the provider, fetched by the
-- engine without blocking), through vim.ui.select so any picker plugin styles them. The
-- chat keeps its history; the next request goes to the new adapter.
function M.change_adapter(buf)
  local chat = M.chats[buf]
  if not chat or chat.status == "streaming" then
    return
  end
  local ok, names = pcall(rpc.request, "adapters")
  if not ok then
    vim.notify("CodeCompanion: " .. tostring(names), vim.log.levels.ERROR)
    return
  end
  vim.ui.select(names, { prompt = "Adapter (now " .. (chat.adapter.name or "?") .. ")" }, function(name)
    if name then
      rpc.notify("chat.models", { chat_id = buf, adapter = name })
    end
  end)
end

function render.choose_model(chat, op)
  local function use(model)
    rpc.notify("chat.set_adapter", { chat_id = chat.bufnr, adapter = op.adapter, model = model })
  end
  local http_opts = ((config().adapters or {}).http or {}).opts or {}
  if http_opts.show_model_choices == false then
    return use(nil) -- adapters.http.opts.show_model_choices = false: the adapter's default model
  end
  if #op.models <= 1 then
    return use(op.models[1])
  end
  vim.ui.select(op.models, { prompt = "Model" }, function(model)
    if model then
      use(model)
    end
  end)
end

-- `gm` in a chat with an agent: one of its options (mode, model, reasoning level...),
-- then a value; `gR`: an earlier session of the agent, loaded with the next message.
function render.choose_option(chat, op)
  local names = {}
  for _, option in ipairs(op.options) do
    table.insert(names, ("%s (%s)"):format(option.name, tostring(option.current)))
  end
  vim.ui.select(names, { prompt = "Agent option" }, function(_, index)
    local option = index and op.options[index]
    if not option then
      return
    end
    local labels = {}
    for _, value in ipairs(option.values) do
      table.insert(labels, value.name)
    end
    vim.ui.select(labels, { prompt = option.name }, function(_, choice)
      if choice then
        rpc.notify("chat.set_option", { chat_id = chat.bufnr, id = option.id, value = option.values[choice].value })
      end
    end)
  end)
end

function render.choose_session(chat, op)
  if #op.sessions == 0 then
    return vim.notify("CodeCompanion: the agent has no earlier sessions here")
  end
  local labels = {}
  for _, session in ipairs(op.sessions) do
    table.insert(labels, session.title .. (type(session.updated) == "string" and ("  " .. session.updated) or ""))
  end
  vim.ui.select(labels, { prompt = "Resume session" }, function(_, index)
    if index then
      rpc.notify("chat.resume", { chat_id = chat.bufnr, session_id = op.sessions[index].id })
    end
  end)
end

-- The agent's slash commands, completed after `\` with <C-x><C-o> (the chat's omnifunc).
function render.commands(chat, op)
  chat.commands = op.commands
end

-- <C-_> or <C-x><C-o> in the chat: `#{` editor context, `@{` tools and groups, and after `\`
-- an agent's slash commands.
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

function M.stop(buf)
  local chat = M.chats[buf]
  if chat and chat.status == "streaming" then
    rpc.notify("chat.stop", { chat_id = buf })
  end
end

local window = require("codecompanion_py.chat.window")
local keymaps = require("codecompanion_py.chat.keymaps")
local editing = require("codecompanion_py.chat.editing")
local rules = require("codecompanion_py.chat.rules")

local INTRO = "Welcome to CodeCompanion ✨! Press ? for options"
local MODE_NAMES = { n = "normal", i = "insert", v = "visual", x = "visual", s = "select", o = "operator",
  t = "terminal" }

-- `?`: the chat's keymaps as configured, one line each: the keys, the description and,
-- when not normal mode only, the modes.
function M.keymap_lines()
  local rows = {}
  for _, map in ipairs(keymaps.resolve(config())) do
    local keys, modes = {}, {}
    local mode_order = vim.tbl_keys(map.modes)
    table.sort(mode_order, function(a, b) return (a == "n" and "" or a) < (b == "n" and "" or b) end)
    for _, mode in ipairs(mode_order) do
      local lhs = map.modes[mode]
      table.insert(modes, MODE_NAMES[mode] or mode)
      for _, key in ipairs(type(lhs) == "table" and lhs or { lhs }) do
        if not vim.tbl_contains(keys, key) then
          table.insert(keys, key)
        end
      end
    end
    table.sort(modes)
    if #keys > 0 then
      table.insert(rows, { keys = table.concat(keys, " "), desc = map.description or map.name,
        modes = table.concat(modes, ", ") })
    end
  end
  local width = 0
  for _, row in ipairs(rows) do
    width = math.max(width, vim.fn.strdisplaywidth(row.keys))
  end
  local lines = {}
  for _, row in ipairs(rows) do
    local pad = string.rep(" ", width - vim.fn.strdisplaywidth(row.keys))
    local where = row.modes == "normal" and "" or (" (" .. row.modes .. ")")
    table.insert(lines, (" %s%s  %s%s"):format(row.keys, pad, row.desc, where))
  end
  return lines
end

-- `?`: the chat's keymaps in a floating window; q, <Esc> or ? closes it.
function M.show_keymaps()
  local lines = M.keymap_lines()
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local float_buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(float_buf, 0, -1, false, lines)
  vim.bo[float_buf].modifiable = false
  vim.bo[float_buf].bufhidden = "wipe"
  local height = math.min(#lines, math.max(1, vim.o.lines - 4))
  width = math.min(width + 2, math.max(10, vim.o.columns - 4))
  local win = api.nvim_open_win(float_buf, true, {
    relative = "editor", width = width, height = height, style = "minimal", border = "rounded",
    row = math.floor((vim.o.lines - height) / 2), col = math.floor((vim.o.columns - width) / 2),
    title = " Chat keymaps ", title_pos = "center",
  })
  local function close()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end
  for _, lhs in ipairs({ "q", "<Esc>", "?" }) do
    vim.keymap.set("n", lhs, close, { buffer = float_buf, nowait = true, desc = "close" })
  end
  api.nvim_create_autocmd("WinLeave", { buffer = float_buf, once = true, callback = close })
  return win
end

-- The chats, oldest first, and the one used last (Toggle and Add act on it).
local function chat_list()
  local list = {}
  for _, chat in pairs(M.chats) do
    table.insert(list, chat)
  end
  table.sort(list, function(a, b) return a.bufnr < b.bufnr end)
  return list
end

function M.last_chat()
  local last = M.last and M.chats[M.last]
  if last then
    return last
  end
  local list = chat_list()
  return list[#list]
end

-- Show a chat that exists: focus its window in this tab, or open one.
function M.show_chat(chat, window_opts)
  M.last = chat.bufnr
  local wins = window.windows(chat.bufnr)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    return wins[1]
  end
  local cfg = config()
  if window_opts then
    cfg = vim.tbl_deep_extend("force", cfg, { display = { chat = { window = window_opts } } })
  end
  local win = window.open(chat.bufnr, cfg)
  -- Set in each new window, as CodeCompanion does: an ftplugin's `setlocal` is this window's.
  vim.bo[chat.bufnr].filetype = "codecompanion"
  pcall(api.nvim_win_set_cursor, win, { api.nvim_buf_line_count(chat.bufnr), 0 })
  fire("ChatOpened", { bufnr = chat.bufnr, id = chat.bufnr })
  return win
end

function M.hide(chat)
  if window.visible(chat.bufnr) then
    window.hide(chat.bufnr)
    fire("ChatHidden", { bufnr = chat.bufnr, id = chat.bufnr })
  end
end

-- <C-c>: the chat is gone (its request stopped, its buffer wiped, the engine's session closed).
function M.close(buf)
  local chat = M.chats[buf]
  if not chat then
    return
  end
  M.stop(buf)
  pcall(api.nvim_buf_delete, buf, { force = true }) -- BufWipeout does the rest
end

-- `{` / `}`: the previous or next chat in this window.
local function cycle(chat, step)
  local list = chat_list()
  if #list < 2 then
    return
  end
  for i, other in ipairs(list) do
    if other == chat then
      local target = list[(i - 1 + step) % #list + 1]
      api.nvim_win_set_buf(0, target.bufnr)
      M.last = target.bufnr
      fire("ChatOpened", { bufnr = target.bufnr, id = target.bufnr })
      return
    end
  end
end

local function can_send_code()
  local send = (config().opts or {}).send_code
  if type(send) == "function" then
    local ok, result = pcall(send)
    return ok and result ~= false
  end
  return send ~= false
end

-- Lines of a buffer as CodeCompanion shares code: where they come from, then a fence.
local function code_message(context, lines)
  local code = table.concat(lines, "\n")
  local fence = "```"
  for run in code:gmatch("`+") do
    if #run >= #fence then
      fence = string.rep("`", #run + 1)
    end
  end
  return ("Here is some code from %s:\n\n%s%s\n%s\n%s"):format(context.relative or context.path, fence,
    context.filetype or "", code, fence)
end

-- The buffer a command was given in: its name, type and (for a range) its lines.
local function source_context(buf, line1, line2)
  local path = api.nvim_buf_get_name(buf)
  local context = {
    bufnr = buf,
    filetype = vim.bo[buf].filetype,
    path = path,
    relative = path ~= "" and vim.fn.fnamemodify(path, ":.") or ("[buffer " .. buf .. "]"),
  }
  if line1 and line2 then
    context.lines = api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
    context.start_line, context.end_line = line1, line2
  end
  return context
end

-- Text below the last user header, as if the user had typed it there.
local function add_to_message(chat, text)
  local buf = chat.bufnr
  local last = api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ""
  local new = vim.split(text, "\n", { plain = true })
  if last ~= "" then
    table.insert(new, 1, "")
    if last ~= user_header() then
      table.insert(new, 1, "")
    end
  end
  api.nvim_buf_set_lines(buf, -1, -1, false, new)
  chat.end_pos = nil
end

-- CodeCompanion's chat object, for keymap callbacks and require("codecompanion").buf_get_chat().
local Chat = {}
Chat.__index = Chat

function Chat:add_callback(event, fn)
  self.callbacks[event] = self.callbacks[event] or {}
  table.insert(self.callbacks[event], fn)
end

function Chat:submit()
  M.submit(self.bufnr)
end

function Chat:restore()
  M.restore(self.bufnr)
end

function Chat:close()
  M.close(self.bufnr)
end

-- chat:add_buf_message({ role = "user", content = "..." }): text for the next message.
function Chat:add_buf_message(message)
  if self.status == "streaming" then
    return vim.notify("CodeCompanion: wait for the reply (or press q) before adding to the chat",
      vim.log.levels.WARN)
  end
  add_to_message(self, type(message) == "table" and tostring(message.content or "") or tostring(message))
end

-- chat:add_context({ role = "user", content = "..." }, source, id): context for the next
-- message, listed in the chat's context block as `id` (CodeCompanion's, for slash commands
-- of the user's own).
function Chat:add_context(message, source, id)
  local content = type(message) == "table" and message.content or message
  if type(content) ~= "string" or content == "" then
    return vim.notify("CodeCompanion: add_context needs { content = <text> }", vim.log.levels.WARN)
  end
  source = type(source) == "string" and source or "context"
  id = type(id) == "string" and id ~= "" and id or ("<" .. source .. ">" .. source .. "</" .. source .. ">")
  if not id:match("^<(%w+)>.-</%1>$") then -- the block lists ids of this form
    local tag = (source:gsub("%W", ""))
    id = ("<%s>%s</%s>"):format(tag, (id:gsub("[<>]", "")), tag)
  end
  shared.add_pending(self, { { id = id, kind = source, label = source, content = content } })
  if vim.bo[self.bufnr].modifiable then
    show_shared(self)
  end
end

local function new_ui(chat)
  return {
    open = function() M.show_chat(chat) end,
    hide = function() M.hide(chat) end,
    is_visible = function() return window.visible(chat.bufnr) end,
  }
end

-- What the keymap callbacks named "keymaps.<name>" do.
M.actions = {
  options = function() M.show_keymaps() end,
  completion = function()
    api.nvim_feedkeys(api.nvim_replace_termcodes("<C-x><C-o>", true, false, true), "n", false)
  end,
  send = function(chat)
    vim.cmd("stopinsert")
    M.submit(chat.bufnr)
  end,
  regenerate = function(chat) actions.regenerate(chat.bufnr) end,
  close = function(chat)
    vim.cmd("stopinsert")
    M.close(chat.bufnr)
  end,
  stop = function(chat) M.stop(chat.bufnr) end,
  clear = function(chat) actions.clear(chat.bufnr) end,
  codeblock = function(chat) editing.codeblock(chat) end,
  yank_code = function(chat) editing.yank_code(chat, chat_opts().register or "+") end,
  next_chat = function(chat) cycle(chat, 1) end,
  previous_chat = function(chat) cycle(chat, -1) end,
  next_header = function(chat) editing.jump_header(chat, 1) end,
  previous_header = function(chat) editing.jump_header(chat, -1) end,
  change_adapter = function(chat) M.change_adapter(chat.bufnr) end,
  fold_code = function(chat) editing.fold_code(chat) end,
  debug = function(chat) actions.debug(chat.bufnr) end,
  toggle_system_prompt = function(chat) actions.toggle_system_prompt(chat.bufnr) end,
  clear_approvals = function(chat) rpc.notify("chat.clear_approvals", { chat_id = chat.bufnr }) end,
  yolo_mode = function(chat) rpc.notify("chat.yolo", { chat_id = chat.bufnr }) end,
  goto_file_under_cursor = function() editing.goto_file(chat_opts().goto_file_action) end,
  buffer_sync_all = function(chat) shared.toggle_sync(chat, "all") end,
  buffer_sync_diff = function(chat) shared.toggle_sync(chat, "diff") end,
  clear_rules = function(chat) M.remove_context(chat, "rules") end,
  acp_options = function(chat) rpc.notify("chat.agent_options", { chat_id = chat.bufnr }) end,
  acp_resume = function(chat) rpc.notify("chat.sessions", { chat_id = chat.bufnr }) end,
}

local function show_intro(buf)
  local intro = display().intro_message
  if intro == nil then
    intro = INTRO
  end
  if type(intro) == "string" and intro ~= "" then
    api.nvim_buf_set_extmark(buf, ns, 0, 0, { virt_text = { { "  " .. intro, "Comment" } }, virt_text_pos = "eol" })
  end
end

-- The lines of a saved chat's turns (`opts.saved`, from :CodeCompanionHistory), ending with
-- the user's header, ready for the next message. A long chat comes with its latest turns
-- only (`saved.hidden` earlier ones left out, which the engine still sends to the LLM).
local function transcript_lines(saved)
  local lines = {}
  if (saved.hidden or 0) > 0 then
    local note = ("> (%d earlier messages are not shown; the LLM still has them)"):format(saved.hidden)
    vim.list_extend(lines, { note, "" })
  end
  for _, turn in ipairs(saved.transcript or {}) do
    local header = turn.role == "user" and user_header()
      or llm_header({ name = saved.adapter, formatted_name = saved.adapter })
    vim.list_extend(lines, { header, "" })
    vim.list_extend(lines, vim.split(turn.text, "\n", { plain = true }))
    table.insert(lines, "")
  end
  vim.list_extend(lines, { user_header(), "", "" })
  return lines
end

-- Rule groups into a chat (when it opens, and /rules): listed in its context block, sent
-- with its next message.
function M.load_rules(chat, names)
  local items, problems = rules.load(config(), names)
  if #problems > 0 then
    vim.notify("CodeCompanion: rules: " .. table.concat(problems, "; "), vim.log.levels.WARN)
  end
  shared.add_pending(chat, items)
  show_shared(chat)
  return items
end

---@param opts? { adapter?: string, model?: string, prompt?: string, context?: table, window?: table,
---  submit?: boolean, saved?: table, system_prompts?: string[], ignore_system_prompt?: boolean, tools?: string[] }
function M.open(opts)
  opts = opts or {}
  local context = opts.context or source_context(api.nvim_get_current_buf())
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, "[CodeCompanion] " .. buf)
  vim.bo[buf].bufhidden = "hide" -- hidden, a chat keeps its buffer, its state and its stream
  vim.bo[buf].buflisted = (display().window or {}).buflisted == true
  api.nvim_buf_set_lines(buf, 0, -1, false, opts.saved and transcript_lines(opts.saved) or { user_header(), "", "" })
  local chat = setmetatable({
    bufnr = buf,
    id = buf,
    status = "idle",
    context = context,
    callbacks = {},
    adapter = { name = opts.adapter },
    open_payload = { chat_id = buf, adapter = opts.adapter, model = opts.model, cwd = vim.fn.getcwd(),
      system_prompts = opts.system_prompts, ignore_system_prompt = opts.ignore_system_prompt, tools = opts.tools,
      history_id = opts.saved and opts.saved.id or nil },
  }, Chat)
  chat.ui = new_ui(chat)
  for event, fn in pairs(chat_config("callbacks") or {}) do
    for _, f in ipairs(type(fn) == "table" and fn or { fn }) do
      if type(f) == "function" then
        chat:add_callback(event, f)
      end
    end
  end
  M.chats[buf] = chat
  -- The engine starts on the chat (and a first chat starts the engine) while the rest of the
  -- window is made: the filetype alone costs Neovim about a millisecond of runtime searches.
  open_in_engine(chat)
  pcall(vim.treesitter.language.register, "markdown", "codecompanion")
  local treesitter = display().treesitter ~= false and highlight.parser(buf) -- before the filetype's handlers
  vim.b[buf].ts_highlight = treesitter and true or nil -- as vim.treesitter.start sets it: no regex syntax first
  -- Highlighting is Neovim's largest cost while a reply streams (chat/highlight.lua); regex
  -- syntax (`display.chat.treesitter = false`) costs more than twice tree-sitter's. It starts
  -- once the command is done, as in CodeCompanion: the first request does not wait for it.
  vim.schedule(function()
    if api.nvim_buf_is_valid(buf) and not (treesitter and highlight.start(buf, user_header())) then
      vim.b[buf].ts_highlight = nil
      vim.bo[buf].syntax = "markdown"
    end
  end)
  -- As in CodeCompanion: the window opens, the filetype is set in it (an ftplugin's
  -- `setlocal wrap` is the chat window's) and ChatOpened fires, then the chat is made
  -- (ChatCreated), then a prompt given on the command line is sent.
  M.show_chat(chat, opts.window)
  if opts.saved then
    shared.restore(chat, opts.saved.context)
  end
  M.load_rules(chat, rules.autoload(config(), chat))
  keymaps.set(chat, config(), M.actions)
  require("codecompanion_py.chat.slash").set_keymaps(chat)
  show_intro(buf)
  vim.bo[buf].omnifunc = "v:lua.require'codecompanion_py.chat'.omnifunc"
  require("codecompanion_py.chat.completion").register(chat_opts().completion_provider)
  api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function() -- <C-c>, :bwipeout, or any other way the buffer goes
      M.chats[buf] = nil
      if M.last == buf then
        M.last = nil
      end
      pcall(rpc.notify, "chat.close", { chat_id = buf })
      run_callbacks(chat, "on_closed")
      fire("ChatClosed", { bufnr = buf, id = buf })
    end,
  })
  api.nvim_create_autocmd("BufEnter", { buffer = buf, callback = function() M.last = buf end })
  api.nvim_create_autocmd("CompleteDone", {
    buffer = buf,
    callback = function() require("codecompanion_py.chat.slash").completed(chat, vim.v.completed_item) end,
  })
  fire("ChatCreated", { bufnr = buf, id = buf })
  run_callbacks(chat, "on_created")
  for _, win in ipairs(window.windows(buf)) do
    api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  end
  if opts.prompt and opts.prompt ~= "" then
    api.nvim_buf_set_lines(buf, -2, -1, false, vim.split(opts.prompt, "\n", { plain = true }))
    if opts.submit ~= false then
      M.submit(buf)
    end
  elseif display().start_in_insert_mode then
    vim.cmd("startinsert!")
  end
  return chat
end

-- :CodeCompanionChat Toggle: hide the last chat when it shows, show it when hidden, or a new one.
function M.toggle(opts)
  local chat = M.last_chat()
  if chat and window.visible(chat.bufnr) then
    return M.hide(chat)
  elseif chat then
    M.show_chat(chat)
    return chat
  end
  return M.open(opts)
end

-- :'<,'>CodeCompanionChat Add: the lines into the last chat (a new one if none), shown.
function M.add(buf, line1, line2)
  if not can_send_code() then
    return vim.notify("CodeCompanion: sending code is turned off (opts.send_code)", vim.log.levels.WARN)
  end
  local context = source_context(buf, line1, line2)
  local chat = M.last_chat() or M.open({ context = context })
  if chat.status == "streaming" then
    return vim.notify("CodeCompanion: wait for the reply (or press q) before adding to the chat",
      vim.log.levels.WARN)
  end
  add_to_message(chat, code_message(context, context.lines))
  M.show_chat(chat)
  return chat
end

function M.refresh_cache()
  rpc.config_changed() -- the engine reads adapters and tools afresh with the next command
  vim.notify("CodeCompanion: refreshed the cache for all chat buffers")
end

-- CodeCompanion's event to ask for a refresh.
api.nvim_create_autocmd("User", {
  pattern = "CodeCompanionChatRefreshCache",
  callback = function() M.refresh_cache() end,
})

local SUBCOMMANDS = { toggle = true, add = true, refreshcache = true }

-- :[range]CodeCompanionChat [Toggle | Add | RefreshCache | adapter=NAME model=NAME prompt...]
-- `cmd` is the user command's table (its range); a range shares those lines with the chat.
function M.command(fargs, cmd)
  fargs = fargs or {}
  cmd = cmd or {}
  local buf = api.nvim_get_current_buf()
  local ranged = (cmd.range or 0) > 0
  local sub = fargs[1] and fargs[1]:lower()
  if #fargs == 1 and SUBCOMMANDS[sub] then
    if sub == "toggle" then
      return M.toggle()
    elseif sub == "add" then
      local line1, line2 = cmd.line1, cmd.line2
      if not ranged then
        line1, line2 = api.nvim_win_get_cursor(0)[1], api.nvim_win_get_cursor(0)[1]
      end
      return M.add(buf, line1, line2)
    end
    return M.refresh_cache()
  end
  local opts, words = {}, {}
  for _, arg in ipairs(fargs) do
    local key, value = arg:match("^(%w+)=(.+)$")
    if (key == "adapter" or key == "model") and #words == 0 then
      opts[key] = value
    else
      table.insert(words, arg)
    end
  end
  opts.prompt = table.concat(words, " ")
  if ranged and not M.chats[buf] then
    if not can_send_code() then
      return vim.notify("CodeCompanion: sending code is turned off (opts.send_code)", vim.log.levels.WARN)
    end
    opts.context = source_context(buf, cmd.line1, cmd.line2)
    local code = code_message(opts.context, opts.context.lines)
    -- with a prompt: sent at once, the code after it; without: the code waits for the user's words
    opts.submit = opts.prompt ~= ""
    opts.prompt = opts.prompt ~= "" and (opts.prompt .. "\n\n" .. code) or code
  end
  return M.open(opts)
end

return M
