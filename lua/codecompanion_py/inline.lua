-- The inline assistant, `:[range]CodeCompanion [adapter=NAME] [model=NAME] [placement=WHERE] <prompt>`,
-- and `:CodeCompanionCmd <prompt>`.
--
-- Inline: the selection (or the cursor line) and the prompt go to the engine
-- (codecompanion_py/inline.py), whose LLM says where its code goes (replace the selection,
-- add after it, before it, a new buffer, or the chat; `placement=` forces one). The code
-- streams into the buffer and ends in the diff review (diff.lua). `q` stops a request that
-- still runs: the buffer is left as it was. `#{buffer}`, `#{chat}` (the last chat's
-- messages) and `#{clipboard}` in the prompt share those. Events: User
-- CodeCompanionInlineStarted/Finished and, as for a chat, CodeCompanionRequest*.
--
-- Cmd: the LLM's answer is one Ex command, put on the command line as text to edit or run;
-- it is never run by itself, and never typed as keys.
local api = vim.api
local rpc = require("codecompanion_py.rpc")

local M = {}

M.runs = {} ---@type table<string, table> running requests by id ("inline:1", "cmd:2")
local count = 0

local fire = require("codecompanion_py.chat.config").fire

local function display()
  return (require("codecompanion_py").config.display or {}).inline or {}
end

-- `adapter=x model=y placement=z rest of the prompt` -> options, prompt
---@param args? string
---@return { adapter?: string, model?: string, placement?: string } opts
---@return string prompt
function M.parse(args)
  local opts, words = {}, {}
  for _, word in ipairs(vim.split(args or "", "%s+", { trimempty = true })) do
    local key, value = word:match("^(%w+)=(%S+)$")
    if key == "adapter" or key == "model" or key == "placement" then
      opts[key] = value
    else
      table.insert(words, word)
    end
  end
  return opts, table.concat(words, " ")
end

local function new_id(kind)
  count = count + 1
  return kind .. ":" .. count
end

local function context_of(prompt)
  local items = {}
  if prompt:find("#{buffer}", 1, true) then
    local buf = api.nvim_get_current_buf()
    table.insert(items, { label = "The whole buffer (" .. vim.fn.fnamemodify(api.nvim_buf_get_name(buf), ":.") .. ")",
      content = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n") })
  end
  if prompt:find("#{clipboard}", 1, true) then
    local ok, text = pcall(vim.fn.getreg, "+")
    table.insert(items, { label = "The clipboard", content = ok and text or "" })
  end
  return items
end

-- `q` stops the request; so does closing the buffer it writes into.
-- CodeCompanion's `interactions.inline.keymaps.stop` (normal mode, default `q`; false: none).
local function stop_key()
  local map = require("codecompanion_py.chat.keymaps").user(require("codecompanion_py").config or {}, "inline").stop
  local key = map ~= false and (type(map) == "table" and type(map.modes) == "table" and map.modes.n or "q")
  return type(key) == "string" and key or nil
end

local function map_stop(run)
  run.stop_key = stop_key()
  if run.stop_key then
    vim.keymap.set("n", run.stop_key, function() M.stop(run.id) end,
      { buffer = run.buf, nowait = true, desc = "CodeCompanion: stop the inline request" })
  end
  run.watch = api.nvim_create_autocmd("BufUnload", { buffer = run.buf, once = true, callback = function()
    run.gone = true
    M.stop(run.id)
    vim.notify("CodeCompanion: the buffer was closed, so the inline request stopped", vim.log.levels.WARN)
  end })
end

local function unmap_stop(run)
  pcall(api.nvim_del_autocmd, run.watch or -1)
  if api.nvim_buf_is_valid(run.buf) then
    pcall(vim.keymap.del, "n", run.stop_key, { buffer = run.buf })
  end
end

---@param opts { prompt?: string, args?: string, line1?: integer, line2?: integer, range?: integer,
---  adapter?: string, model?: string, placement?: string }
---@return table|nil run
function M.run(opts)
  local parsed, prompt = M.parse(opts.args)
  opts = vim.tbl_extend("keep", opts, parsed)
  prompt = opts.prompt or prompt
  if prompt == nil or vim.trim(prompt) == "" then
    return vim.ui.input({ prompt = "CodeCompanion: " }, function(typed)
      if typed and vim.trim(typed) ~= "" then
        M.run(vim.tbl_extend("force", opts, { prompt = typed, args = "" }))
      end
    end)
  end
  local alias, rest = prompt:match("^/([%w_%-]+)%s*(.*)$")
  if alias then -- `:CodeCompanion /alias`: a prompt of the library
    return require("codecompanion_py.prompts.run").alias(alias, rest, opts)
  end
  local buf = api.nvim_get_current_buf()
  if vim.bo[buf].filetype == "codecompanion" then
    return vim.notify("CodeCompanion: the inline assistant works in a code buffer, not in a chat", vim.log.levels.WARN)
  end
  -- refused, not queued: its code would stream into text that the pending change may still alter
  local busy = require("codecompanion_py.diff").busy(buf) or M.writing(buf)
  if busy then
    return vim.notify("CodeCompanion: " .. busy .. ", then ask again", vim.log.levels.WARN)
  end
  local ranged = (opts.range or 0) > 0
  local line1 = ranged and opts.line1 or api.nvim_win_get_cursor(0)[1]
  local line2 = ranged and opts.line2 or line1
  local run = {
    id = new_id("inline"),
    buf = buf,
    line1 = line1,
    line2 = line2,
    ranged = ranged,
    prompt = prompt,
    modified = vim.bo[buf].modified,
    text = "",
  }
  local chat = require("codecompanion_py.chat")
  local last_chat = prompt:find("#{chat}", 1, true) and chat.last_chat() or nil
  local payload = {
    chat_id = run.id,
    prompt = prompt,
    adapter = opts.adapter,
    model = opts.model,
    placement = opts.placement,
    filetype = vim.bo[buf].filetype,
    path = vim.fn.fnamemodify(api.nvim_buf_get_name(buf), ":."),
    lines = { line1, line2 },
    selection = ranged and table.concat(api.nvim_buf_get_lines(buf, line1 - 1, line2, false), "\n") or nil,
    context = context_of(prompt),
    chat = last_chat and last_chat.bufnr or nil,
  }
  if not rpc.notify("inline.run", payload) then
    return
  end
  M.runs[run.id] = run
  map_stop(run)
  return run
end

-- Why `buf` cannot take another change now (an inline request writes into it), or nil.
---@param buf integer
---@return string|nil why
function M.writing(buf)
  for _, run in pairs(M.runs) do
    if run.buf == buf and not run.cmd and not run.over then
      return "the inline assistant is writing to this buffer (q stops it)"
    end
  end
end

---@param id string "inline:N" or "cmd:N"
function M.stop(id)
  if M.runs[id] and not M.runs[id].over then
    rpc.notify("inline.stop", { chat_id = id })
  end
end

local render = {}

-- Where the code goes: the region of the buffer it streams into.
function render.placement(run, op)
  if run.gone then
    return
  end
  local placement = op.placement
  if placement == "replace" and not run.ranged then
    placement = "add" -- nothing selected: nothing to replace
  end
  run.placement = placement
  if placement == "chat" then
    M.stop(run.id)
    run.to_chat = true
    return
  end
  if placement == "new" then
    local layout = display().layout or "vertical"
    local filetype = vim.bo[run.buf].filetype
    vim.cmd(({ vertical = "vnew", horizontal = "new", tab = "tabnew", buffer = "enew" })[layout] or "vnew")
    unmap_stop(run)
    run.buf = api.nvim_get_current_buf()
    vim.bo[run.buf].filetype = filetype
    map_stop(run)
    run.start, run.count, run.modified = 0, 1, false
  elseif placement == "replace" then
    run.start, run.count = run.line1 - 1, run.line2 - run.line1 + 1
  elseif placement == "before" then
    run.start, run.count = run.line1 - 1, 0
  else -- add
    run.start, run.count = run.line2, 0
  end
  run.original = api.nvim_buf_get_lines(run.buf, run.start, run.start + run.count, false)
end

function render.text(run, op)
  if run.gone then
    return
  end
  if run.to_chat then
    run.text = run.text .. op.text
    return
  end
  if not run.start then -- code before any placement: as the engine's parser says, replace
    render.placement(run, { placement = "replace" })
  end
  run.text = run.text .. op.text
  local lines = vim.split(run.text, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  if run.written then
    pcall(vim.cmd.undojoin) -- the whole edit is one undo step
  end
  local ok, err = pcall(api.nvim_buf_set_lines, run.buf, run.start, run.start + run.count, false, lines)
  if not ok then -- help, a terminal, 'nomodifiable': stop at the first refusal, said once
    run.gone = true
    M.stop(run.id)
    return vim.notify("CodeCompanion: the inline request stopped, this buffer cannot be changed: " .. err,
      vim.log.levels.WARN)
  end
  run.count, run.written = #lines, true
end

local function put_back(run)
  if run.written and api.nvim_buf_is_valid(run.buf) then
    api.nvim_buf_set_lines(run.buf, run.start, run.start + run.count, false, run.original)
    vim.bo[run.buf].modified = run.modified
  end
end

local function finished(run)
  run.over = true -- kept until InlineFinished, which comes after Done
  unmap_stop(run)
end

function render.done(run, op)
  finished(run)
  if run.gone then
    return
  end
  if run.to_chat then -- a question, not code: the chat answers it
    local context = run.ranged and { lines = api.nvim_buf_get_lines(run.buf, run.line1 - 1, run.line2, false) } or nil
    local prompt = run.prompt
    if context then
      prompt = prompt .. "\n\n```" .. vim.bo[run.buf].filetype .. "\n" .. table.concat(context.lines, "\n") .. "\n```"
    end
    return require("codecompanion_py.chat").open({ prompt = prompt })
  end
  if op.status ~= "success" then
    put_back(run)
    if op.status == "error" then
      vim.notify("CodeCompanion: " .. (op.message or "the inline request failed"), vim.log.levels.ERROR)
    end
    return
  end
  if not run.written then
    return vim.notify("CodeCompanion: the LLM gave no code", vim.log.levels.WARN)
  end
  if run.placement == "new" then
    return
  end
  require("codecompanion_py.diff").start(run.buf, {
    start = run.start,
    count = run.count,
    original = run.original,
    modified = run.modified,
    keymaps = "inline",
    on_done = function(result) fire("InlineReviewed", { bufnr = run.buf, result = result }) end,
  })
end

function render.error(run, op)
  if not run.over then -- no Done follows an error that stopped the request from starting
    M.runs[run.id] = nil
    render.done(run, { status = "error", message = op.message })
  else
    vim.notify("CodeCompanion: " .. op.message, vim.log.levels.ERROR)
  end
end

function render.fire(run, op)
  local data = type(op.data) == "table" and op.data or {}
  data.bufnr = run.buf
  if op.event == "InlineFinished" then
    M.runs[run.id] = nil
  end
  fire(op.event, data)
end

-- :CodeCompanionCmd: ask, then put the answer on the command line.
---@param args? string the prompt, with options
function M.cmd(args)
  local opts, prompt = M.parse(args)
  if prompt == "" then
    return vim.ui.input({ prompt = "CodeCompanionCmd: " }, function(typed)
      if typed and vim.trim(typed) ~= "" then
        M.cmd(typed)
      end
    end)
  end
  local run = { id = new_id("cmd"), buf = api.nvim_get_current_buf(), text = "", cmd = true }
  if rpc.notify("cmd.run", { chat_id = run.id, prompt = prompt, adapter = opts.adapter, model = opts.model }) then
    M.runs[run.id] = run
  end
end

local cmd_render = {}

function cmd_render.text(run, op)
  run.text = run.text .. op.text
end

-- The command goes on the command line as text, never as keys: typed keys would let an ESC
-- in it leave the command line and run the rest in Normal mode. A bare ":" opens the
-- command line, and its CmdlineEnter sets the text. It is also in the command history
-- (`:` then <Up>), which is all a user in another mode gets, with a message.
---@param command string
function M.put_on_cmdline(command)
  if command:find("[%c\127]") then -- the engine refuses these; never open the line with one
    return vim.notify("CodeCompanion: the command holds control characters: " .. vim.fn.strtrans(command),
      vim.log.levels.ERROR)
  end
  vim.fn.histadd("cmd", command)
  if api.nvim_get_mode().mode ~= "n" then
    return vim.notify("CodeCompanion: the command is in the command history (: then <Up>): " .. command)
  end
  api.nvim_create_autocmd("CmdlineEnter", { pattern = ":", once = true, callback = function()
    if vim.fn.setcmdline(command) ~= 0 then -- not ready yet on some versions: right after
      vim.schedule(function() vim.fn.setcmdline(command) end)
    end
  end })
  api.nvim_feedkeys(":", "n", false)
end

function cmd_render.done(run)
  M.runs[run.id] = nil
  local command = vim.trim(run.text):gsub("\n.*", "")
  if command ~= "" then
    M.put_on_cmdline(command) -- for the user to edit or run
  end
end

cmd_render.fire = render.fire -- CodeCompanion's Request* events, `interaction = "cmd"`

function cmd_render.error(run, op)
  M.runs[run.id] = nil
  vim.notify("CodeCompanion: " .. op.message, vim.log.levels.ERROR)
end

-- The engine's ops for an inline request or a command (chat.apply routes them here).
---@param id string
---@param ops table[]
function M.apply(id, ops)
  local run = M.runs[id]
  if not run then
    return
  end
  local handlers = run.cmd and cmd_render or render
  for _, op in ipairs(ops) do
    local handler = handlers[op.op]
    if handler and (not run.over or op.op == "fire") then
      handler(run, op)
    end
  end
end

M.op_names = vim.tbl_keys(render)

return M
