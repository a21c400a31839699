-- CodeCompanion's CLI interaction (:CodeCompanionCLI, require("codecompanion").cli()): an
-- agent's own CLI (Claude Code, Codex...) in a real terminal, with editor context sent into
-- it. The engine parses the arguments, resolves `interactions.cli` and words the prompt
-- (codecompanion_py/terminal_agents.py); this file owns the terminals and their windows.
-- Each agent runs in its own process group (a pty job leads its session), killed whole on close.
local api = vim.api
local options = require("codecompanion_py.options")
local window = require("codecompanion_py.chat.window")

local M = {}

---@type table<integer, { bufnr: integer, name: string, chan: integer, pid: integer, ready: boolean, queue: table }>
M.terminals = {}
local last, last_toggled, history = nil, nil, {}

local fire = require("codecompanion_py.chat.config").fire
local function notify(message, level) vim.notify("CodeCompanion: " .. message, level or vim.log.levels.ERROR) end
-- The group's leader is the job's pid: the signal reaches what the agent started too.
local function kill_group(pid, signal) pcall(vim.uv.kill, -pid, signal) end

---@param bufnr integer
function M.close(bufnr)
  local term = M.terminals[bufnr]
  if not term then return end
  M.terminals[bufnr] = nil
  kill_group(term.pid, "sigterm")
  pcall(vim.fn.jobstop, term.chan)
  vim.defer_fn(function() kill_group(term.pid, "sigkill") end, 2000) -- what ignored SIGTERM
  pcall(api.nvim_buf_delete, bufnr, { force = true })
  last = last ~= bufnr and last or nil
  fire("CLIClosed", { bufnr = bufnr })
end

local function flush(term)
  local item = M.terminals[term.bufnr] and table.remove(term.queue, 1)
  term.sending = item ~= nil and pcall(vim.fn.chansend, term.chan, item)
  if term.sending then
    vim.defer_fn(function() flush(term) end, 100) -- a TUI reads text and its Enter apart
  end
end

-- Ready once its first screen is drawn (output, then quiet), or after 5 s: an agent that
-- sets its tty up late would drop what came before.
local function when_output(term)
  if term.ready then return end
  term.quiet = term.quiet or vim.uv.new_timer()
  term.quiet:start(term.seen and 300 or 5000, 0, vim.schedule_wrap(function()
    term.quiet:close()
    term.ready = true
    flush(term)
  end))
end

-- Show the terminal: `display.chat.window` with `display.cli.window` over it.
---@param bufnr integer
---@param size? { width?: number, height?: number }
function M.show(bufnr, size)
  last, last_toggled = bufnr, "cli"
  if window.visible(bufnr) then return end
  local own = vim.tbl_deep_extend("force", { opts = { list = false } }, options.get("display.cli.window") or {},
    size or {})
  window.open(bufnr, vim.tbl_deep_extend("force", require("codecompanion_py").config or {},
    { display = { chat = { window = own } } }))
  fire("CLIOpened", { bufnr = bufnr })
end

---@param bufnr integer
function M.hide(bufnr)
  if window.visible(bufnr) then
    window.hide(bufnr)
    fire("CLIHidden", { bufnr = bufnr })
  end
end

-- `{` / `}` (chats too, from chat/actions.lua): the interaction before or after `bufnr`, by age, shown here.
---@param bufnr integer
---@param step integer
function M.cycle(bufnr, step)
  local chats = require("codecompanion_py.chat")
  local list = vim.list_extend(vim.tbl_keys(chats.chats), vim.tbl_keys(M.terminals))
  table.sort(list)
  local at = #list > 1 and vim.fn.index(list, bufnr) or -1
  if at < 0 then return end
  local target = list[(at + step) % #list + 1]
  vim.cmd.buffer({ target, mods = { keepalt = true } }) -- hiding it goes back to the alternate
  if chats.chats[target] then
    chats.last = target
    fire("ChatOpened", { bufnr = target, id = target })
  else
    last = target
  end
end

local function create(agent)
  local buf = api.nvim_create_buf(false, true)
  local term = { bufnr = buf, name = agent.name, ready = false, queue = {} }
  local ok, chan = pcall(api.nvim_buf_call, buf, function()
    local job = { cwd = vim.fn.getcwd(), on_stdout = function() term.seen = true; when_output(term) end }
    job.term = vim.fn.has("nvim-0.11") == 1 or nil -- 0.10 has termopen() for it
    return (job.term and vim.fn.jobstart or vim.fn.termopen)(agent.argv, job)
  end)
  if not ok or chan <= 0 then
    pcall(api.nvim_buf_delete, buf, { force = true })
    return notify(("could not start the CLI agent `%s`: %s"):format(agent.name, ok and chan or tostring(chan)))
  end
  term.chan, term.pid = chan, vim.fn.jobpid(chan)
  pcall(api.nvim_buf_set_name, buf, ("[CodeCompanion CLI] %d"):format(buf))
  vim.bo[buf].filetype = "codecompanion_cli"
  vim.b[buf].codecompanion_cli = agent.name
  M.terminals[buf] = term
  when_output(term)
  api.nvim_create_autocmd("TermClose", { buffer = buf, once = true, callback = function()
    vim.schedule(function() M.close(buf) end)
    if vim.v.event.status ~= 0 then -- an agent that fails at once must not vanish unexplained
      notify(("the CLI agent `%s` exited with code %d"):format(agent.name, vim.v.event.status))
    end
  end })
  if options.get("interactions.cli.opts.reload") ~= false then -- what the agent wrote, in the buffers
    api.nvim_create_autocmd("BufLeave", { buffer = buf, command = "silent! checktime" })
  end
  if options.get("interactions.cli.opts.auto_insert") then
    api.nvim_create_autocmd("BufEnter", { buffer = buf, command = "startinsert" })
  end
  local keys = vim.tbl_deep_extend("force", { next_chat = { modes = { n = "}" } },
    previous_chat = { modes = { n = "{" } } }, options.get("interactions.cli.keymaps") or {})
  for name, step in pairs({ next_chat = 1, previous_chat = -1 }) do
    for mode, lhs in pairs(keys[name] and keys[name].modes or {}) do
      vim.keymap.set(mode, lhs, function() M.cycle(buf, step) end, { buffer = buf, desc = "Open the " .. name })
    end
  end
  fire("CLICreated", { bufnr = buf })
  return term
end

-- The editor context a prompt names, captured here for the engine to word: `this` (the
-- current buffer and a visual selection) and each other `#{tag}` through chat/context.lua.
local function capture(prompt, range)
  local buf = api.nvim_get_current_buf()
  if vim.fn.mode():match("^[vV\22]") then
    vim.cmd("normal! \27") -- leave visual mode: its marks are the selection
    range = { vim.fn.line("'<"), vim.fn.line("'>") }
  end
  local this = { path = api.nvim_buf_get_name(buf), filetype = vim.bo[buf].filetype }
  if range then
    this.first, this.last = range[1], range[2]
    this.lines = api.nvim_buf_get_lines(buf, range[1] - 1, range[2], false)
  end
  local items, context = {}, require("codecompanion_py.chat.context")
  for tag in (prompt or ""):gmatch("#{([^}]+)}") do
    if not (tag == "this" or tag:find("^file:")) then
      local got, problems = context.capture({ context = { bufnr = buf } }, "#{" .. tag .. "}")
      items[tag] = { items = got, problems = problems }
    end
  end
  return { this = vim.bo[buf].buftype == "" and this or nil, items = items }, range ~= nil
end

-- The terminal a prompt goes to: the last one used, else (an agent named) one of that agent.
local function find(name)
  local found = last and M.terminals[last]
  if name and not (found and found.name == name) then
    found = vim.iter(vim.tbl_values(M.terminals)):find(function(term) return term.name == name end)
  end
  return found
end

local ask -- the Ask input, below

-- One call: `cli()`'s prompt and options, or the command's words (`call.words`).
local function run(call, opts)
  call.context, call.visual = capture(call.prompt or (call.words and table.concat(call.words, " ")), call.range)
  call.cli, call.cwd = options.get("interactions.cli") or {}, vim.fn.getcwd()
  call.send_code, call.range = options.get("opts.send_code") ~= false, nil
  local ok, plan = pcall(require("codecompanion_py.rpc").request, "cli.prepare", call)
  if not ok or plan.error then return notify(ok and plan.error or tostring(plan)) end
  vim.tbl_map(function(warning) notify(warning, vim.log.levels.WARN) end, plan.warnings or {})
  if plan.action == "ask" then return ask(plan, call) end
  local term = plan.action == "send" and find(plan.named and plan.agent.name) or create(plan.agent)
  if not term then return end
  if opts.focus ~= false then
    M.show(term.bufnr, { width = opts.width, height = opts.height })
  end
  last, last_toggled = term.bufnr, "cli"
  if plan.text then
    vim.list_extend(term.queue, plan.submit and { plan.text, "\r" } or { plan.text })
    if term.ready and not term.sending then flush(term) end
    fire("CLISent", { bufnr = term.bufnr, text = plan.text })
    local review = require("codecompanion_py.code_review")
    review.agent_starts()
    review.sent((call.context.items.code_review or {}).items or {})
  end
  return term
end

-- The Ask input: `:w` sends what it holds, `:w!` sends and submits; <Up>/<Down> go back
-- through what was sent before.
function ask(plan, call)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].buftype, vim.bo[buf].filetype = "acwrite", "codecompanion_input"
  api.nvim_buf_set_name(buf, ("[CodeCompanion CLI input] %d"):format(buf))
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(plan.text or "", "\n"))
  local win = api.nvim_open_win(buf, true, { relative = "cursor", row = 1, col = 0, width = 60, height = 5,
    border = "single", title = " CodeCompanion CLI Prompt ", title_pos = "left" })
  local at = #history + 1
  api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = function()
    local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    table.insert(history, text)
    pcall(api.nvim_win_close, win, true)
    pcall(api.nvim_buf_delete, buf, { force = true })
    run({ prompt = text, agent = plan.named and plan.agent.name or nil, submit = vim.v.cmdbang == 1 or call.submit,
      range = call.visual and call.context.this and { call.context.this.first, call.context.this.last } or nil }, {})
  end })
  for lhs, step in pairs({ ["<Up>"] = -1, ["<Down>"] = 1 }) do
    vim.keymap.set("n", lhs, function()
      at = math.max(1, math.min(#history + 1, at + step))
      api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(history[at] or "", "\n"))
    end, { buffer = buf })
  end
end

-- require("codecompanion").cli(): `cli()`, `cli({ agent, prompt = true })`, `cli("prompt", { submit, focus })`.
---@param prompt_or_opts? string|table
---@param opts? { agent?: string, focus?: boolean, submit?: boolean, prompt?: boolean, width?: number, height?: number }
function M.cli(prompt_or_opts, opts)
  local prompt = type(prompt_or_opts) == "string" and prompt_or_opts or nil
  opts = type(prompt_or_opts) == "table" and prompt_or_opts or opts or {}
  return run({ prompt = prompt, agent = opts.agent, submit = opts.submit == true, ask = opts.prompt == true }, opts)
end

-- :[range]CodeCompanionCLI[!] [agent=<name>] [Ask|prompt]
---@param cmd table the user command's argument
function M.command(cmd)
  return run({ words = cmd.fargs, submit = cmd.bang, range = cmd.range > 0 and { cmd.line1, cmd.line2 } or nil }, {})
end

-- The last CLI terminal hidden when it shows, else shown; a new one when there is none.
---@return nil
function M.toggle_cli()
  local term = last and M.terminals[last]
  if not term then return M.cli() end
  (window.visible(term.bufnr) and M.hide or M.show)(term.bufnr)
end

-- require("codecompanion").toggle() asks first: a CLI that shows is hidden; with nothing
-- shown, the last toggled (a chat or a CLI) comes back. False when the chat's toggle acts.
---@return boolean
function M.toggle()
  local term = last and M.terminals[last]
  local chat = require("codecompanion_py.chat").last_chat()
  if (term and window.visible(term.bufnr)) or (last_toggled == "cli" and not (chat and window.visible(chat.bufnr))) then
    M.toggle_cli()
    return true
  end
  last_toggled = "chat"
  return false
end

api.nvim_create_autocmd("VimLeavePre", { callback = function()
  for _, term in pairs(M.terminals) do
    kill_group(term.pid, "sigkill")
  end
end })

return M
