-- One renderer per UI op the engine sends a chat, named after the op's tag;
-- codecompanion_py/ui/ops.py defines their fields (an absent field is nil, never vim.NIL).
-- chat.apply() calls them; tests/e2e/test_render.py checks the list against the engine's.
local api = vim.api
local rpc = require("codecompanion_py.rpc")
local config = require("codecompanion_py.chat.config")
local buffer = require("codecompanion_py.chat.buffer")
local highlight = require("codecompanion_py.chat.highlight")

---@class CodeCompanionAdapterInfo
---@field name string
---@field formatted_name? string
---@field model? string
---@field type? string
---@field vision? boolean false when the model reads no images

---@type table<string, fun(chat: CodeCompanionChat, op: table)>
local M = {}

local append, paragraph = buffer.append, buffer.paragraph

-- Text that follows a block (a tool line, a plan, shown output) starts a paragraph of its
-- own: glued to the block's last line it would end up in a fence or on the tool line.
local function after_block(chat)
  if chat.block == "block" then
    paragraph(chat, "")
    chat.block = nil
  end
end

---@param chat CodeCompanionChat
---@param op { adapter: CodeCompanionAdapterInfo, saved_id?: string }
function M.ready(chat, op)
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
  payload.fork_of = nil -- forked once: a new engine reopens the fork from its own saved chat
end

---@param chat CodeCompanionChat
---@param op { adapter: CodeCompanionAdapterInfo, continued?: boolean }
function M.begin(chat, op)
  chat.adapter = op.adapter
  chat.block = nil
  chat.turn_started = true
  if op.continued then -- the LLM goes on after tool results, in the same reply
    return append(chat, "\n\n")
  end
  chat.blocks = {}
  append(chat, "\n\n" .. config.llm_header(op.adapter) .. "\n\n")
end

---@param chat CodeCompanionChat
---@param op { text: string }
function M.reasoning(chat, op)
  if config.display().show_reasoning == false then
    return
  end
  after_block(chat)
  if chat.block ~= "reasoning" then
    append(chat, "### Reasoning\n\n")
    chat.block = "reasoning"
    chat.reasoning_row = buffer.last_position(chat.bufnr) - 1
  end
  append(chat, op.text)
end

---@param chat CodeCompanionChat
---@param op { text: string }
function M.text(chat, op)
  after_block(chat)
  if chat.block == "reasoning" then
    append(chat, "\n\n### Response\n\n")
    -- `display.chat.fold_reasoning` (default on): the reasoning folds once the answer starts
    local first, last = chat.reasoning_row, buffer.last_position(chat.bufnr) - 2
    if config.display().fold_reasoning ~= false and first and last > first then
      buffer.fold(chat, first, last)
    end
  end
  chat.block = "text"
  append(chat, op.text)
end

---@param chat CodeCompanionChat
---@param op { name: string, arguments?: table }
function M.tool_call(chat, op)
  local args = op.arguments
  if type(args) ~= "table" or vim.tbl_isempty(args) then
    args = vim.empty_dict()
  end
  paragraph(chat, ("**Tool call** `%s` `%s`"):format(op.name, vim.json.encode(args)))
  chat.block = "block"
end

local STATUS_MARK = { success = "✓", error = "✗", rejected = "✗ rejected", cancelled = "⊘ cancelled" }
local STATUS_ICON = { success = "tool_success", error = "tool_failure" } -- display.chat.icons

---@param chat CodeCompanionChat
---@param op { name: string, status: string, text?: string }
function M.tool_output(chat, op)
  local icons = config.display().icons or {}
  local mark = icons[STATUS_ICON[op.status] or ""] or STATUS_MARK[op.status] or op.status
  buffer.show(chat, op.text or "", ("**Tool** `%s` %s"):format(op.name, vim.trim(mark)))
end

local AGENT_STATUS = { pending = "○", in_progress = "◐", completed = "✓", failed = "✗" }

---@param chat CodeCompanionChat
---@param op { id: string, status: string, title?: string, locations?: { path: string, line?: integer }[] }
function M.agent_tool(chat, op)
  local lines = { ("**Tool** %s %s"):format(AGENT_STATUS[op.status] or "○", op.title or op.id) }
  for _, location in ipairs(type(op.locations) == "table" and op.locations or {}) do
    local line = type(location.line) == "number" and (":" .. location.line) or ""
    table.insert(lines, ("  ↳ `%s%s`"):format(location.path, line))
  end
  buffer.set_block(chat, "tool:" .. op.id, lines)
  chat.block = "block"
end

local PLAN_MARK = { completed = "[x]", in_progress = "[~]", pending = "[ ]" }

---@param chat CodeCompanionChat
---@param op { entries?: { content?: string, status?: string }[] }
function M.plan(chat, op)
  local lines = { "**Plan**", "" }
  for _, entry in ipairs(op.entries or {}) do
    table.insert(lines, ("- %s %s"):format(PLAN_MARK[entry.status] or "[ ]", (entry.content or ""):gsub("\n", " ")))
  end
  buffer.set_block(chat, "plan", lines)
  chat.block = "block"
end

---@param chat CodeCompanionChat
---@param op { text?: string, title?: string }
function M.show(chat, op)
  buffer.show(chat, op.text or "", op.title)
end

-- A retry's line, in place of the last; without text the reply has come: its blank line is the reply's.
---@param chat CodeCompanionChat
---@param op { text?: string }
function M.pending(chat, op)
  buffer.set_block(chat, "pending", { op.text and ("> " .. op.text) or "" })
  chat.block, chat.blocks.pending = op.text and "block", op.text and chat.blocks.pending
end

---@param chat CodeCompanionChat
---@param op table
function M.call(chat, op)
  require("codecompanion_py.editor").handle(chat, op)
end

-- `display.chat.show_tools_processing` (default on): a line at the end of the chat while tools run.
local function tools_processing(chat, running)
  if chat.tools_mark then
    pcall(api.nvim_buf_del_extmark, chat.bufnr, buffer.ns, chat.tools_mark)
    chat.tools_mark = nil
  end
  if running and config.display().show_tools_processing ~= false then
    chat.tools_mark = api.nvim_buf_set_extmark(chat.bufnr, buffer.ns, buffer.last_position(chat.bufnr), 0, {
      virt_lines = { { { "Tools processing ...", "Comment" } } },
    })
  end
end

---@param chat CodeCompanionChat
---@param op { event: string, data?: table }
function M.fire(chat, op)
  local data = type(op.data) == "table" and op.data or {}
  data.bufnr = chat.bufnr
  if op.event == "ToolsStarted" or op.event == "ToolsFinished" then
    tools_processing(chat, op.event == "ToolsStarted")
  end
  config.fire(op.event, data)
end

---@param chat CodeCompanionChat
---@param op { message: string }
function M.error(chat, op)
  vim.notify("CodeCompanion: " .. op.message, vim.log.levels.ERROR)
  if chat.status == "streaming" and not chat.turn_started then
    buffer.unlock(chat) -- the submit never reached a request: give the buffer back
  end
end

-- The token count (or "stopped") on the blank line after the reply: in sight however narrow the
-- window (at the end of a long last line it would be cut off at the window's edge).
local function done_marks(chat, op, row)
  local display, virt = config.display(), {}
  if op.status == "stopped" then
    table.insert(virt, { " (stopped)", "WarningMsg" })
  end
  if op.tokens and display.show_token_count ~= false then
    local shown = (" (%d tokens)"):format(op.tokens)
    if type(display.token_count) == "function" then -- CodeCompanion's formatter: (tokens, adapter)
      local ok, text = pcall(display.token_count, op.tokens, vim.deepcopy(chat.adapter))
      shown = ok and type(text) == "string" and text or shown
    end
    table.insert(virt, { shown, "Comment" })
  end
  if #virt > 0 then
    api.nvim_buf_set_extmark(chat.bufnr, buffer.ns, row, 0, { virt_text = virt, virt_text_pos = "eol" })
  end
end

-- `gm`'s follow-up, given to the LLM with the tool results: the user's message, then a new reply.
---@param chat CodeCompanionChat
---@param op { text: string }
function M.follow_up(chat, op)
  chat.follow_up = nil
  after_block(chat)
  append(chat, "\n\n" .. config.user_header() .. "\n\n" .. op.text)
end

---@param chat CodeCompanionChat
---@param op { status: "success"|"error"|"stopped"|"empty", message?: string, tokens?: integer }
function M.done(chat, op)
  local buf = chat.bufnr
  if op.status == "empty" then
    return buffer.unlock(chat)
  end
  if op.status == "error" and op.message then
    paragraph(chat, "> **Error:** " .. op.message:gsub("\n", " ")) -- one blank line above, whatever came before
  end
  chat.status = "idle"
  chat.turn_started = false
  tools_processing(chat, false)
  append(chat, "\n\n" .. config.user_header() .. "\n\n")
  local header = api.nvim_buf_line_count(buf) - 3
  done_marks(chat, op, header - 1)
  -- the finished turn leaves the region that is parsed again (seal checks the header's row)
  highlight.seal(buf, header)
  buffer.unlock(chat)
  buffer.show_context(chat)
  config.fire(op.status == "stopped" and "ChatStopped" or "ChatDone",
    { bufnr = buf, id = buf, status = op.status, tokens = op.tokens })
  if op.status == "stopped" then
    config.run_callbacks(chat, "on_cancelled")
  end
  config.run_callbacks(chat, "on_completed", { status = op.status })
  config.run_callbacks(chat, "on_ready")
  local follow_up = chat.follow_up -- `gm` the turn had no request for: the next message (sent if it ended well)
  chat.follow_up = nil
  if follow_up then
    buffer.add_to_message(chat, follow_up)
    if op.status == "success" then
      vim.schedule(function() require("codecompanion_py.chat").submit(buf) end)
    end
  end
end

-- A list to pick from with vim.ui.select (so any picker plugin styles it): `pick(index)`.
local function select(labels, prompt, pick)
  vim.ui.select(labels, { prompt = prompt }, function(_, index)
    if index then
      pick(index)
    end
  end)
end

---@param chat CodeCompanionChat
---@param op { adapter: string, models: string[] }
function M.choose_model(chat, op)
  local function use(model)
    rpc.notify("chat.set_adapter", { chat_id = chat.bufnr, adapter = op.adapter, model = model })
  end
  local http_opts = ((config.all().adapters or {}).http or {}).opts or {}
  if http_opts.show_model_choices == false then
    return use(nil) -- adapters.http.opts.show_model_choices = false: the adapter's default model
  end
  local models = op.models or {} -- none (an agent not yet started): its default, chosen once it runs
  if #models <= 1 then
    return use(models[1])
  end
  vim.ui.select(models, { prompt = "Model" }, function(model)
    if model then
      use(model)
    end
  end)
end

-- `gm` in a chat with an agent: one of its options (mode, model, reasoning level...),
-- then a value; `gR`: an earlier session of the agent, loaded with the next message.
---@param chat CodeCompanionChat
---@param op { options: { id: string, name: string, current: any, values: { name: string, value: any }[] }[] }
function M.choose_option(chat, op)
  local names = vim.tbl_map(function(o) return ("%s (%s)"):format(o.name, tostring(o.current)) end, op.options)
  select(names, "Agent option", function(index)
    local option = op.options[index]
    select(vim.tbl_map(function(v) return v.name end, option.values), option.name, function(choice)
      rpc.notify("chat.set_option", { chat_id = chat.bufnr, id = option.id, value = option.values[choice].value })
    end)
  end)
end

---@param chat CodeCompanionChat
---@param op { sessions: { id: string, title: string, updated?: string }[] }
function M.choose_session(chat, op)
  if #op.sessions == 0 then
    return vim.notify("CodeCompanion: the agent has no earlier sessions here")
  end
  local labels = vim.tbl_map(function(s)
    return s.title .. (type(s.updated) == "string" and ("  " .. s.updated) or "")
  end, op.sessions)
  select(labels, "Resume session", function(index)
    rpc.notify("chat.resume", { chat_id = chat.bufnr, session_id = op.sessions[index].id })
  end)
end

-- The agent's slash commands, completed after `\` with <C-x><C-o> (the chat's omnifunc).
---@param chat CodeCompanionChat
---@param op { commands: table[] }
function M.commands(chat, op)
  chat.commands = op.commands
end

-- The conversation is gone: everything below the first `## Me` goes, and what is above
-- it (the settings header) and on it (the hint) stays.
---@param chat CodeCompanionChat
function M.cleared(chat)
  local buf = chat.bufnr
  local first = 0
  for i, line in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line == config.user_header() then
      first = i
      break
    end
  end
  buffer.delete_marks_from(buf, first) -- token counts, agent tool blocks (the hint is on row first - 1)
  chat.blocks, chat.block = {}, nil
  chat.shared, chat.shared_pending = {}, nil -- the engine forgot what the context sent too
  if first == 0 then
    buffer.set_lines(chat, 0, -1, { config.user_header(), "", "" })
  else
    buffer.set_lines(chat, first, -1, { "", "" })
  end
  buffer.go_to_end(buf)
end

-- The last reply leaves the buffer (from its header to the end); what the user had typed
-- since comes back below the next `## Me`, once the new reply is done.
---@param chat CodeCompanionChat
function M.rewind(chat)
  local buf = chat.bufnr
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local user_header, header, me = config.user_header(), nil, nil
  for i = #lines, 1, -1 do
    if not me and lines[i] == user_header then
      me = i
    end
    if lines[i]:sub(1, 3) == "## " and lines[i] ~= user_header then -- a reply's header
      header = i
      break
    end
  end
  if not header then
    return
  end
  local draft = buffer.trimmed(me and me > header and vim.list_slice(lines, me + 1) or {})
  local cut = header - 1 -- 0-based row of the header
  while cut > 0 and lines[cut] == "" do
    cut = cut - 1
  end
  buffer.delete_marks_from(buf, cut)
  chat.status = "streaming"
  chat.turn_started = false
  chat.blocks, chat.block = {}, nil
  buffer.set_lines(chat, cut, -1, {})
  if #draft > 0 then
    api.nvim_create_autocmd("User", {
      pattern = { "CodeCompanionChatDone", "CodeCompanionChatStopped" },
      callback = function(args)
        if (args.data or {}).bufnr ~= buf then
          return false
        end
        if api.nvim_buf_is_valid(buf) then
          api.nvim_buf_set_lines(buf, -2, -1, false, draft)
        end
        return true -- once
      end,
    })
  end
  config.fire("ChatSubmitted", { bufnr = buf, id = buf })
end

---@param chat CodeCompanionChat
---@param op { header: integer, conversation: boolean, files?: table[] }
function M.rewound(chat, op)
  require("codecompanion_py.chat.rewind").rewound(chat, op)
end

-- A read-only float with what the engine holds for the chat; q closes it.
---@param chat CodeCompanionChat
---@param op { text: string, title?: string }
function M.debug(chat, op)
  require("codecompanion_py.chat.float").open(vim.split(op.text, "\n", { plain = true }), {
    title = " " .. (op.title or ("Debug: chat %d"):format(chat.bufnr)) .. " ",
    width = math.max(20, math.floor(vim.o.columns * 0.8)), height = math.max(5, math.floor(vim.o.lines * 0.8)),
    filetype = "markdown", wrap = true, keys = { "q" },
  })
end

M.settings = require("codecompanion_py.chat.settings").render

return M
