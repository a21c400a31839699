-- The chat buffer: window, keymaps, submit/stop, and `apply(chat_id, ops)`, the one
-- function the Python engine calls to render. Ops arrive batched; each has a `render`
-- function below named after its tag, and `codecompanion_py/ui/ops.py` defines their
-- fields (an absent field is nil, never vim.NIL).
local api = vim.api
local rpc = require("codecompanion_py.rpc")
-- What needs the engine beyond sending (regenerate, clear, debug view, system prompt,
-- settings header): its functions, and the renderers of its ops.
local actions = require("codecompanion_py.chat_actions")

local M = {}

local ns = api.nvim_create_namespace("codecompanion_py")
local USER_HEADER = "## Me"

---@type table<integer, table> chat state by buffer number (the chat id)
M.chats = {}

local function fire(event, data)
  api.nvim_exec_autocmds("User", { pattern = "CodeCompanion" .. event, modeline = false, data = data })
end

local function config()
  return require("codecompanion_py").config
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
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
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
  for _, win in ipairs(followers) do
    -- only when the row changes: placing the cursor on a long wrapped line costs time
    -- proportional to its length
    if api.nvim_win_get_cursor(win)[1] ~= end_row + 1 then
      api.nvim_win_set_cursor(win, { end_row + 1, 0 })
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

function render.ready(chat, op)
  if chat.engine_ready and chat.adapter.model ~= nil and
      (chat.adapter.name ~= op.adapter.name or chat.adapter.model ~= op.adapter.model) then
    vim.notify(("CodeCompanion: now using %s (%s)"):format(op.adapter.formatted_name, op.adapter.model or "default"))
  end
  chat.adapter = op.adapter
  chat.engine_ready = true
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
  append(chat, ("\n\n## CodeCompanion (%s)\n\n"):format(op.adapter.formatted_name or op.adapter.name))
end

function render.reasoning(chat, op)
  after_block(chat)
  if chat.block ~= "reasoning" then
    append(chat, "### Reasoning\n\n")
    chat.block = "reasoning"
  end
  append(chat, op.text)
end

function render.text(chat, op)
  after_block(chat)
  if chat.block == "reasoning" then
    append(chat, "\n\n### Response\n\n")
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
  M.show(chat, op.text or "", ("**Tool** `%s` %s"):format(op.name, STATUS_MARK[op.status] or op.status))
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

function render.fire(chat, op)
  local data = type(op.data) == "table" and op.data or {}
  data.bufnr = chat.bufnr
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
  if op.tokens and config().display.chat.show_token_count ~= false then
    table.insert(virt, { (" (%d tokens)"):format(op.tokens), "Comment" })
  end
  if #virt > 0 then
    api.nvim_buf_set_extmark(buf, ns, row, 0, { virt_text = virt, virt_text_pos = "eol" })
  end
  chat.status = "idle"
  chat.turn_started = false
  append(chat, "\n\n" .. USER_HEADER .. "\n\n")
  unlock(chat)
  fire(op.status == "stopped" and "ChatStopped" or "ChatDone",
    { bufnr = buf, id = buf, status = op.status, tokens = op.tokens })
end

local unknown_reported = {}

function M.apply(chat_id, ops)
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
    if chat.status == "streaming" then
      render.done(chat, { status = "error", message = reason })
    end
  end
end

-- The op names this file renders (checked against the engine's list by the tests).
function M.op_names()
  return vim.list_extend(vim.tbl_keys(render), vim.tbl_keys(actions.render))
end

-- The text after the last `## Me` header.
local function user_text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local start = 0
  for i = #lines, 1, -1 do
    if lines[i] == USER_HEADER then
      start = i
      break
    end
  end
  return vim.trim(table.concat(vim.list_slice(lines, start + 1), "\n"))
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
  local text = user_text(buf)
  if text == "" then
    vim.notify("CodeCompanion: nothing to send", vim.log.levels.WARN)
    return
  end
  if not chat.engine_ready and not rpc.notify("chat.open", chat.open_payload) then
    return -- a failed open is retried with the next submit
  end
  if not rpc.notify("chat.submit", { chat_id = buf, text = text, settings = actions.read_settings(buf) }) then
    return
  end
  chat.status = "streaming"
  chat.turn_started = false
  chat.end_pos = nil -- the user typed since the last reply: find the end afresh
  vim.bo[buf].modifiable = false
  fire("ChatSubmitted", { bufnr = buf, id = buf })
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

function M.omnifunc(findstart, base)
  local chat = M.chats[api.nvim_get_current_buf()]
  if findstart == 1 then
    local before = api.nvim_get_current_line():sub(1, api.nvim_win_get_cursor(0)[2])
    local start = before:find("\\[%w_:-]*$")
    return start and start - 1 or -3
  end
  local items = {}
  for _, command in ipairs(chat and chat.commands or {}) do
    if ("\\" .. command.name):sub(1, #base) == base then
      table.insert(items, { word = "\\" .. command.name, menu = command.description })
    end
  end
  return items
end

function M.stop(buf)
  local chat = M.chats[buf]
  if chat and chat.status == "streaming" then
    rpc.notify("chat.stop", { chat_id = buf })
  end
end

local function open_window(buf)
  local win_opts = config().display.chat.window or {}
  local layout = win_opts.layout or "vertical"
  if layout == "float" then
    local width = math.floor(vim.o.columns * (win_opts.width or 0.6))
    local height = math.floor(vim.o.lines * (win_opts.height or 0.7))
    return api.nvim_open_win(buf, true, {
      relative = "editor", width = width, height = height, border = win_opts.border or "rounded",
      row = math.floor((vim.o.lines - height) / 2), col = math.floor((vim.o.columns - width) / 2),
    })
  end
  if layout == "vertical" then
    vim.cmd("botright vsplit")
    local width = win_opts.width or 0.45
    api.nvim_win_set_width(0, width < 1 and math.floor(vim.o.columns * width) or width)
  elseif layout == "horizontal" then
    vim.cmd("botright split")
  end
  local win = api.nvim_get_current_win()
  api.nvim_win_set_buf(win, buf)
  return win
end

local KEYMAP_PREFIX = "CodeCompanion: "
local HINT = "Press ? for keymaps"
local MODE_NAMES = { n = "normal", i = "insert", v = "visual", x = "visual", s = "select", o = "operator" }

-- The chat's keymaps as mapped in `buf` (those whose desc starts with "CodeCompanion: "),
-- one line each: the key, what it does and, when not normal mode only, its modes.
function M.keymap_lines(buf)
  local found, order = {}, {}
  for _, mode in ipairs({ "n", "i", "v", "x", "o" }) do
    for _, map in ipairs(api.nvim_buf_get_keymap(buf, mode)) do
      local desc = map.desc or ""
      if desc:sub(1, #KEYMAP_PREFIX) == KEYMAP_PREFIX then
        local key = map.lhs .. "\t" .. desc
        if not found[key] then
          found[key] = { lhs = map.lhs, desc = desc:sub(#KEYMAP_PREFIX + 1), modes = {} }
          table.insert(order, found[key])
        end
        table.insert(found[key].modes, MODE_NAMES[mode] or mode)
      end
    end
  end
  table.sort(order, function(a, b)
    return a.lhs:lower() < b.lhs:lower() or (a.lhs:lower() == b.lhs:lower() and a.lhs < b.lhs)
  end)
  local width = 0
  for _, entry in ipairs(order) do
    width = math.max(width, vim.fn.strdisplaywidth(entry.lhs))
  end
  local lines = {}
  for _, entry in ipairs(order) do
    local modes = table.concat(entry.modes, ", ")
    local pad = string.rep(" ", width - vim.fn.strdisplaywidth(entry.lhs))
    local where = modes == "normal" and "" or (" (" .. modes .. ")")
    table.insert(lines, (" %s%s  %s%s"):format(entry.lhs, pad, entry.desc, where))
  end
  return lines
end

-- `?`: the chat's keymaps in a floating window; q, <Esc> or ? closes it.
function M.show_keymaps(buf)
  local lines = M.keymap_lines(buf)
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

-- The one-line hint on the first `## Me` header: virtual text, so never part of what is sent.
local function show_hint(buf)
  api.nvim_buf_set_extmark(buf, ns, 0, 0, { virt_text = { { "  " .. HINT, "Comment" } }, virt_text_pos = "eol" })
end

local function set_keymaps(buf)
  local function map(mode, lhs, fn, desc)
    vim.keymap.set(mode, lhs, fn, { buffer = buf, desc = KEYMAP_PREFIX .. desc, nowait = true })
  end
  map("n", "<CR>", function() M.submit(buf) end, "send")
  map({ "n", "i" }, "<C-s>", function()
    vim.cmd("stopinsert")
    M.submit(buf)
  end, "send")
  map("n", "q", function() M.stop(buf) end, "stop")
  map("n", "ga", function() M.change_adapter(buf) end, "change adapter and model")
  map("n", "gty", function() rpc.notify("chat.yolo", { chat_id = buf }) end, "toggle YOLO mode (auto-approve tools)")
  map("n", "gtx", function() rpc.notify("chat.clear_approvals", { chat_id = buf }) end, "forget tool approvals")
  map("n", "gm", function() rpc.notify("chat.agent_options", { chat_id = buf }) end, "agent mode, model and options")
  map("n", "gR", function() rpc.notify("chat.sessions", { chat_id = buf }) end, "resume an earlier agent session")
  map("n", "?", function() M.show_keymaps(buf) end, "show keymaps")
end

---@param opts? { adapter?: string, model?: string, prompt?: string }
function M.open(opts)
  opts = opts or {}
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, "[CodeCompanion] " .. buf)
  vim.bo[buf].filetype = "codecompanion"
  pcall(vim.treesitter.language.register, "markdown", "codecompanion")
  -- Highlighting is Neovim's largest cost while a reply streams: treesitter re-parses
  -- after each batch (about 7 ms of CPU per 1,000 tokens of prose here), regex syntax
  -- more than twice that. `display.chat.treesitter = false` falls back to regex syntax.
  if config().display.chat.treesitter == false or not pcall(vim.treesitter.start, buf, "markdown") then
    vim.bo[buf].syntax = "markdown"
  end
  local win = open_window(buf)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  api.nvim_buf_set_lines(buf, 0, -1, false, { USER_HEADER, "", "" })
  local chat = {
    bufnr = buf,
    status = "idle",
    adapter = { name = opts.adapter },
    open_payload = { chat_id = buf, adapter = opts.adapter, model = opts.model, cwd = vim.fn.getcwd() },
  }
  M.chats[buf] = chat
  set_keymaps(buf)
  show_hint(buf)
  vim.bo[buf].omnifunc = "v:lua.require'codecompanion_py.chat'.omnifunc"
  api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      M.chats[buf] = nil
      pcall(rpc.notify, "chat.close", { chat_id = buf })
    end,
  })
  rpc.notify("chat.open", chat.open_payload)
  fire("ChatCreated", { bufnr = buf, id = buf })
  api.nvim_win_set_cursor(win, { 3, 0 })
  if opts.prompt and opts.prompt ~= "" then
    api.nvim_buf_set_lines(buf, 2, 3, false, vim.split(opts.prompt, "\n", { plain = true }))
    M.submit(buf)
  end
  return buf
end

-- :CodeCompanionChat [adapter=NAME] [model=NAME] [prompt words...]
function M.command(fargs)
  local opts, words = {}, {}
  for _, arg in ipairs(fargs or {}) do
    local key, value = arg:match("^(%w+)=(.+)$")
    if (key == "adapter" or key == "model") and #words == 0 then
      opts[key] = value
    else
      table.insert(words, arg)
    end
  end
  opts.prompt = table.concat(words, " ")
  return M.open(opts)
end

return M
