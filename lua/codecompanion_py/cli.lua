-- The CLI interaction: an agent's own CLI (`interactions.cli.agents.<name> = { cmd, args,
-- description }`) in a terminal buffer, and editor context typed into it as the engine words
-- it (codecompanion_py/cli_prompt.py: files as `@path`). The agent runs in its own session
-- (a terminal job leads its process group), and the whole group is ended with the buffer.
local api = vim.api
local config = require("codecompanion_py.chat.config")
local window = require("codecompanion_py.chat.window")

local M = { instances = {}, history = {} } ---@type table
M.latest = false -- whether the interaction used last is a CLI (toggle() goes there)

-- as CodeCompanion waits for an agent's CLI to draw itself before typing into it
local MIN_LINES, STABLE_MS, MAX_WAIT_MS, POLL_MS = 5, 500, 5000, 100

local function settings()
  local all = require("codecompanion_py").config
  return vim.tbl_get(all, "interactions", "cli") or vim.tbl_get(all, "strategies", "cli") or {}
end

local function fail(message)
  vim.notify("CodeCompanion: " .. message, vim.log.levels.ERROR)
end

---@return table|nil the CLI used last that still runs
function M.last()
  local last = M.instances[M.last_bufnr or -1]
  return last and api.nvim_buf_is_valid(last.bufnr) and last or nil
end

-- Type what waits once the CLI has drawn itself (MIN_LINES lines unchanged for STABLE_MS), or
-- after MAX_WAIT_MS anyway.
local function flush(cli)
  if not cli.ready or cli.sending or #cli.queue == 0 or not cli.chan then
    return
  end
  cli.sending = true
  local item = table.remove(cli.queue, 1)
  vim.fn.chansend(cli.chan, item.enter and "\r" or (item.text:gsub("\r\n", "\n")))
  vim.defer_fn(function()
    cli.sending = false
    flush(cli)
  end, POLL_MS)
end

local function poll(cli)
  local waited, last_count, stable = 0, -1, 0
  cli.timer = vim.uv.new_timer()
  cli.timer:start(POLL_MS, POLL_MS, vim.schedule_wrap(function()
    waited = waited + POLL_MS
    local count = 0
    for _, line in ipairs(api.nvim_buf_is_valid(cli.bufnr) and api.nvim_buf_get_lines(cli.bufnr, 0, -1, false) or {}) do
      count = count + (line ~= "" and 1 or 0)
    end
    stable = (count == last_count and count >= MIN_LINES) and stable + POLL_MS or 0
    last_count = count
    if stable >= STABLE_MS or waited >= MAX_WAIT_MS or not api.nvim_buf_is_valid(cli.bufnr) then
      cli.timer:close()
      cli.timer, cli.ready = nil, true
      flush(cli)
    end
  end))
end

---@param cli table
function M.close(cli)
  if M.instances[cli.bufnr] == nil then
    return
  end
  M.instances[cli.bufnr] = nil
  if cli.timer then
    cli.timer:close()
  end
  if cli.pid then
    pcall(vim.uv.kill, -cli.pid, "sigterm") -- the agent's whole group, not its shell alone
  end
  pcall(vim.fn.jobstop, cli.chan)
  pcall(api.nvim_buf_delete, cli.bufnr, { force = true })
  config.fire("CLIClosed", { bufnr = cli.bufnr, id = cli.bufnr })
end

-- Show `cli` (its window in this tab, else a new one as `display.cli.window` over the chat's
-- says, `size` over both) and move there.
---@param cli table
---@param size? { width?: number, height?: number }
function M.show(cli, size)
  M.last_bufnr, M.latest = cli.bufnr, true
  local win = window.windows(cli.bufnr)[1]
  if not win then
    local all = config.all()
    local display = vim.tbl_deep_extend("force", all.display or {}, {
      chat = { window = vim.tbl_deep_extend("force", vim.tbl_get(all, "display", "cli", "window") or {}, size or {}) },
    })
    win = window.open(cli.bufnr, { display = display })
    config.fire("CLIOpened", { bufnr = cli.bufnr, id = cli.bufnr })
  end
  api.nvim_set_current_win(win)
end

---@param cli table
function M.hide(cli)
  if window.visible(cli.bufnr) then
    window.hide(cli.bufnr)
    config.fire("CLIHidden", { bufnr = cli.bufnr, id = cli.bufnr })
  end
end

-- A new CLI of `name` (else `interactions.cli.agent`), its terminal started; nil (told) when
-- the agent is not configured or its command is not there.
---@param name? string
---@return table|nil
function M.create(name)
  local cfg = settings()
  name = name or cfg.agent
  local agent = (cfg.agents or {})[name or ""]
  if type(agent) ~= "table" or type(agent.cmd) ~= "string" then
    return fail(("no CLI agent %s in interactions.cli.agents"):format(vim.inspect(name)))
  elseif vim.fn.executable(agent.cmd) ~= 1 then
    return fail(("the CLI agent %s runs %q, which is not on PATH"):format(name, agent.cmd))
  end
  local buf = api.nvim_create_buf(false, true)
  local cli = { bufnr = buf, agent_name = name, agent = agent, queue = {} }
  local ok, chan = pcall(api.nvim_buf_call, buf, function()
    return vim.fn.jobstart(vim.list_extend({ agent.cmd }, vim.deepcopy(agent.args or {})), {
      term = true,
      cwd = vim.fn.getcwd(),
      on_exit = function() cli.chan = nil end,
    })
  end)
  if not ok or type(chan) ~= "number" or chan <= 0 then
    pcall(api.nvim_buf_delete, buf, { force = true })
    return fail(("the CLI agent %s did not start: %s"):format(name, ok and "jobstart failed" or chan))
  end
  cli.chan, cli.pid = chan, vim.fn.jobpid(chan)
  api.nvim_create_autocmd("VimLeavePre", { group = api.nvim_create_augroup("codecompanion_py.cli", { clear = false }),
    callback = function() pcall(vim.uv.kill, -cli.pid, "sigterm") end }) -- Neovim's hangup is not enough
  pcall(api.nvim_buf_set_name, buf, ("[CodeCompanion CLI] %s %d"):format(name, buf))
  vim.bo[buf].filetype = "codecompanion_cli"
  M.instances[buf] = cli
  local group = api.nvim_create_augroup("codecompanion_py.cli." .. buf, { clear = true })
  api.nvim_create_autocmd({ "TermClose", "BufWipeout" }, { group = group, buffer = buf, callback = function(ev)
    local status = ev.event == "TermClose" and vim.v.event.status or 0
    if status ~= 0 and M.instances[buf] then -- it ended on its own: say so, as its buffer closes
      fail(("the CLI agent %s exited with code %d"):format(name, status))
    end
    vim.schedule(function() M.close(cli) end)
  end })
  api.nvim_create_autocmd("BufEnter", { group = group, buffer = buf, callback = function()
    M.last_bufnr, M.latest = buf, true
    if (cfg.opts or {}).auto_insert ~= false then
      vim.cmd.startinsert()
    end
  end })
  local keymaps = vim.tbl_deep_extend("force", {
    next_chat = { modes = { n = "}" } }, previous_chat = { modes = { n = "{" } } }, cfg.keymaps or {})
  for key, step in pairs({ next_chat = 1, previous_chat = -1 }) do
    for _, lhs in pairs(type(keymaps[key]) == "table" and keymaps[key].modes or {}) do
      vim.keymap.set("n", lhs, function() require("codecompanion_py.chat.actions").cycle(cli, step) end,
        { buffer = buf, desc = keymaps[key].description or "[Nav] Next/previous interaction" })
    end
  end
  poll(cli)
  if (cfg.opts or {}).reload ~= false and not M.reloading then
    -- what the agent writes shows in the buffers: :checktime each second while a CLI runs
    M.reloading = vim.uv.new_timer()
    M.reloading:start(1000, 1000, vim.schedule_wrap(function()
      if next(M.instances) == nil then
        M.reloading:close()
        M.reloading = nil
      elseif vim.fn.getcmdwintype() == "" then
        pcall(vim.cmd.checktime)
      end
    end))
  end
  config.fire("CLICreated", { bufnr = buf, id = buf, agent = name })
  return cli
end

-- What the tags of `prompt` name, read from the editor for the engine to word.
local function gather(prompt, source, range)
  local context = require("codecompanion_py.chat.context")
  local path = api.nvim_buf_get_name(source)
  local selection = range and {
    tag = "", kind = "selection", paths = { path }, filetype = vim.bo[source].filetype, lines = range,
    content = table.concat(api.nvim_buf_get_lines(source, range[1] - 1, range[2], false), "\n"),
  } or nil
  local items, problems = {}, {}
  for start, name, stop in prompt:gmatch("()#{(%w+)[^}]*}()") do
    local tag = prompt:sub(start, stop - 1) .. (prompt:sub(stop):match("^{[^}]*}") or "")
    if name == "this" or (name == "selection" and selection) then
      table.insert(items, selection and vim.tbl_extend("force", selection, { tag = tag })
        or { tag = tag, kind = "buffer", paths = { path } })
    else
      local got, why = context.capture({ context = { bufnr = source } }, tag)
      vim.list_extend(problems, why)
      if #got > 0 then
        local item = { tag = tag, kind = name == "buffers" and "buffers" or got[1].kind, paths = {},
          label = got[1].label, filetype = got[1].filetype or "", content = got[1].content or "" }
        for _, one in ipairs(got) do
          table.insert(item.paths, one.path)
        end
        table.insert(items, item)
      end
    end
  end
  return { prompt = prompt, cwd = vim.fn.getcwd(), items = items, selection = selection }, problems
end

-- Type `prompt` (its editor context worded by the engine) into `cli`; `opts.submit` presses
-- Enter after it, `opts.range` is a visual selection ({ first, last } of `opts.source`).
---@param cli table
---@param prompt string
---@param opts table
function M.send(cli, prompt, opts)
  local payload, problems = gather(prompt, opts.source or api.nvim_get_current_buf(), opts.range)
  for _, problem in ipairs(problems) do
    vim.notify("CodeCompanion: " .. problem, vim.log.levels.WARN)
  end
  local text = require("codecompanion_py.rpc").request("cli.render", payload)
  if type(text) ~= "string" then
    return
  end
  -- unsubmitted prompts each end a line; a submitted one must not (a newline is an Enter)
  text = (opts.submit or text:match("\n$")) and text or text .. "\n"
  table.insert(cli.queue, { text = text })
  if opts.submit then
    table.insert(cli.queue, { enter = true })
  end
  flush(cli)
  config.fire("CLISent", { bufnr = cli.bufnr, id = cli.bufnr, text = text })
end

-- require("codecompanion").cli(prompt, opts) as CodeCompanion has it: no prompt makes a new
-- CLI; a prompt goes to the last one (or the one of `opts.agent`), made when there is none.
-- `opts`: agent, focus (true; false leaves the window as it is), submit, prompt (the prompt
-- buffer instead), width, height, range and source (a visual selection).
---@param prompt? string
---@param opts? table
---@return table|nil cli
function M.run(prompt, opts)
  opts = opts or {}
  if opts.prompt then
    return M.ask(vim.tbl_extend("force", opts, { prompt = false }), prompt)
  end
  local cli
  if prompt then
    cli = vim.iter(vim.tbl_values(M.instances)):find(function(c) return c.agent_name == opts.agent end)
      or (not opts.agent and M.last()) or M.create(opts.agent)
  else
    cli = M.create(opts.agent)
  end
  if not cli then
    return nil
  end
  M.last_bufnr, M.latest = cli.bufnr, true
  if opts.focus ~= false then
    M.show(cli, { width = opts.width, height = opts.height })
  end
  if prompt and prompt ~= "" then
    M.send(cli, prompt, opts)
  end
  return cli
end

-- `:CodeCompanionCLI Ask` / cli({ prompt = true }): a prompt buffer; `:w` sends it, `:w!`
-- sends and submits; <Up>/<Down> bring back earlier prompts.
---@param opts table as M.send's
---@param text? string to start with
function M.ask(opts, text)
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].buftype, vim.bo[buf].filetype = "acwrite", "codecompanion_input"
  api.nvim_buf_set_name(buf, "[CodeCompanion CLI prompt] " .. buf)
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text or "", "\n"))
  local at = #M.history + 1
  api.nvim_create_autocmd("BufWriteCmd", { buffer = buf, callback = function()
    local prompt = vim.trim(table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
    vim.bo[buf].modified = false
    pcall(api.nvim_buf_delete, buf, { force = true })
    if prompt ~= "" then
      table.insert(M.history, prompt)
      M.run(prompt, vim.tbl_extend("force", opts, { submit = opts.submit or vim.v.cmdbang == 1 }))
    end
  end })
  for key, step in pairs({ ["<Up>"] = -1, ["<Down>"] = 1 }) do
    vim.keymap.set("n", key, function()
      at = math.max(1, math.min(#M.history + 1, at + step))
      api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(M.history[at] or "", "\n"))
    end, { buffer = buf, desc = "An earlier prompt" })
  end
  vim.cmd("botright 8split")
  api.nvim_win_set_buf(0, buf)
end

-- toggle(): hide the last CLI, or show it (a new one when none).
---@param agent? string
function M.toggle(agent)
  local cli = M.last()
  if not cli then
    cli = M.create(agent)
    return cli and M.show(cli)
  end
  M.latest = true
  return window.visible(cli.bufnr) and M.hide(cli) or M.show(cli)
end

return M
