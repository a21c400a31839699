-- The only caller of the Python engine.
--   notify(method, payload): fire and forget (chat.open, chat.submit, chat.stop, ...)
--   request(method, payload): waits for an answer (health)
-- Each method and its payload's fields are a struct of codecompanion_py/calls.py, which the
-- engine decodes once: a new method needs one there (tests/test_calls.py checks).
--
-- The engine runs in one of two hosts, chosen on first use (or once a UI is up: start_in_background):
--   * its own, an RPC job started from the plugin's venv (`<plugin root>/.venv`, made by build.lua or
--     :CodeCompanionInstall; `opts.python` names another Python): `python -m codecompanion_py.nvim.host`.
--     g:python3_host_prog and :UpdateRemotePlugins play no part. A host that dies is noticed: the user is
--     told once, streaming chats get their buffers back, and the next command starts a new host.
--   * Neovim's Python provider, for those who registered the remote plugin with :UpdateRemotePlugins
--     (its functions exist): `CodeCompanionPyNotify` / `CodeCompanionPyRequest`, as before.
local M = {}

local config_sent = false

-- The plugin's root: the directory that holds lua/codecompanion_py/ (this file is lua/codecompanion_py/rpc.lua).
local ROOT = vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h:h:h")
local WINDOWS = vim.fn.has("win32") == 1

-- The engine's own host while it runs: its job channel and its Python; `stopping` when Neovim stops it.
local host = { chan = nil, python = nil, stopping = false }

--- The config changed: it is sent again before the next call.
---@return nil
function M.config_changed()
  config_sent = false
end

---@return string root the plugin's root directory
function M.root()
  return ROOT
end

-- The Python that runs the engine's host, and whether the user chose it (`opts.python`).
---@return string python, boolean chosen
function M.python()
  local opts = require("codecompanion_py").config.opts or {}
  if type(opts.python) == "string" and opts.python ~= "" then
    return vim.fn.expand(opts.python), true
  end
  return ROOT .. (WINDOWS and "/.venv/Scripts/python.exe" or "/.venv/bin/python"), false
end

-- What to run to install the engine, in Neovim and in a shell.
local function shell_path(path)
  return path:match("^[%w%.%-_/~+,:@]+$") and path or vim.fn.shellescape(path)
end

---@return string
function M.install_hint()
  return ("Run :CodeCompanionInstall (or in a shell: cd %s && python3 -m venv .venv && .venv/bin/pip install -e .)")
    :format(shell_path(ROOT))
end

-- Installs the engine into <root>/.venv without blocking (build.lua; progress through vim.notify).
---@return nil
function M.install()
  local chunk, err = loadfile(ROOT .. "/build.lua")
  if not chunk then
    return vim.notify("CodeCompanion: " .. tostring(err), vim.log.levels.ERROR)
  end
  chunk()
end

-- The remote plugin is registered when its functions exist or are defined on first call (FuncUndefined).
local function rplugin_registered()
  return vim.fn.exists("*CodeCompanionPyNotify") == 1 or vim.fn.exists("#FuncUndefined#CodeCompanionPyNotify") == 1
end

-- Errors meant for the user as they are: no position, the "CodeCompanion: " prefix.
local function fail(message)
  error("CodeCompanion: " .. message, 0)
end

-- The engine's package and what it imports at startup: one of these missing means an install to make.
local ENGINE_MODULES = { codecompanion_py = true, pynvim = true, httpx = true, msgspec = true, greenlet = true,
  msgpack = true }

local function host_exited(chan, code, python, chosen, stderr)
  if host.chan ~= chan then
    return -- a host that was replaced already
  end
  host.chan = nil
  config_sent = false
  if host.stopping or vim.v.exiting ~= vim.NIL then
    return
  end
  local lines = vim.tbl_filter(function(line) return vim.trim(line) ~= "" end, stderr)
  local missing
  for _, line in ipairs(lines) do
    local module = line:match("No module named '([%w_]+)")
    if module and ENGINE_MODULES[module] then
      missing = missing or ("No module named '%s'"):format(module)
    end
  end
  local reason
  if missing then
    reason = chosen
        and ("the engine cannot start: %s (opts.python = %s). Install it there: %s -m pip install -e %s")
        :format(missing, python, python, shell_path(ROOT))
      or ("the engine is not installed in %s (%s). %s"):format(python, missing, M.install_hint())
  else
    reason = ("the Python engine stopped (exit code %d%s); the next command starts it again")
      :format(code, #lines > 0 and (": " .. lines[#lines]) or "")
  end
  host.last_exit = reason
  vim.notify("CodeCompanion: " .. reason, vim.log.levels.ERROR)
  require("codecompanion_py.chat").engine_lost(reason)
end

local function start_host()
  if vim.g.codecompanion_py_build == "running" then
    fail("the Python engine is still being installed; try again when the install says it is done")
  end
  local python, chosen = M.python()
  if vim.fn.executable(python) ~= 1 then
    if chosen then
      fail(("opts.python = %s is not an executable Python; point it at one that has codecompanion-py installed, "
        .. "or remove it to use the plugin's own venv"):format(python))
    end
    fail(("the Python engine is not installed (no %s). %s"):format(python, M.install_hint()))
  end
  host.stopping = false
  local chan
  local tail = { "" } -- the last lines of its stderr, to say why it stopped
  local ok, result = pcall(vim.fn.jobstart, { python, "-m", "codecompanion_py.nvim.host" }, {
    rpc = true,
    on_stderr = function(_, data)
      tail[#tail] = tail[#tail] .. (data[1] or "")
      for i = 2, #data do
        table.insert(tail, data[i])
      end
      while #tail > 40 do
        table.remove(tail, 1)
      end
    end,
    on_exit = function(_, code)
      host_exited(chan, code, python, chosen, tail)
    end,
  })
  if not ok or result <= 0 then
    fail(("could not start %s: %s"):format(python, ok and ("jobstart returned " .. result) or result))
  end
  chan = result
  host.chan, host.python = chan, python
  return chan
end

-- The engine's channel (its host started when needed), or nil when the remote plugin serves.
local function connect()
  if host.chan or rplugin_registered() then
    return host.chan
  end
  return start_host()
end

-- Once a UI is up (a TUI or a GUI, not a headless script), the engine's host starts while the
-- user has not typed a command yet, so the first one finds it ready (`opts.background_start`,
-- on unless false). A command sent meanwhile waits in the channel until the host reads it.
-- Quiet when there is no engine to start (the first command says so); one that fails says why.
---@param opts table the `opts` of the config
---@return nil
function M.start_in_background(opts)
  local group = vim.api.nvim_create_augroup("codecompanion_py_start", {}) -- one at most, however often setup() runs
  local start = function() vim.schedule(function() pcall(connect) end) end
  if opts.background_start == false then
    return
  elseif #vim.api.nvim_list_uis() > 0 then
    return start()
  end
  vim.api.nvim_create_autocmd("UIEnter", { group = group, once = true, callback = start })
end

-- Agents are processes of the engine's: they must not outlive Neovim.
local exit_hook = false
local function kill_agents_on_exit()
  if exit_hook then
    return
  end
  exit_hook = true
  vim.api.nvim_create_autocmd("VimLeavePre", {
    callback = function()
      if host.chan then
        host.stopping = true
        pcall(vim.rpcrequest, host.chan, "request", "kill_agents", vim.empty_dict())
        pcall(vim.fn.jobstop, host.chan) -- closes its stdin and sends SIGTERM: the host ends
      elseif rplugin_registered() then
        pcall(vim.fn.CodeCompanionPyRequest, "kill_agents", vim.empty_dict())
      end
    end,
  })
end

local function send(method, payload)
  local chan = connect()
  if chan then
    vim.rpcnotify(chan, "notify", method, payload)
  else
    vim.fn.CodeCompanionPyNotify(method, payload)
  end
end

local function ensure_config()
  kill_agents_on_exit()
  if not config_sent then
    config_sent = true
    send("config.set", M.payload_for_config())
  end
end

-- Functions cannot cross the RPC. Adapter factories (`adapters.http.NAME = function() ... end`)
-- are called here, as CodeCompanion calls them; Lua-defined tools stay in tools.lua (the
-- engine gets their description); every other function becomes a reference the engine can
-- call back (functions.to_data). Functions only Lua uses (keymap callbacks...) travel as
-- references too, which the engine never calls. Where a value sits is read from `keys`.
local function prepare(value, path, keys)
  local depth = #keys
  if depth == 4 and keys[2] == "chat" and keys[3] == "tools" and keys[4] ~= "opts" and keys[4] ~= "groups"
      and type(value) == "table" then
    return require("codecompanion_py.tools").register(keys[4], value)
  end
  if type(value) == "function" and depth == 3 and keys[1] == "adapters" and (keys[2] == "http" or keys[2] == "acp") then
    local ok, result = pcall(value)
    if not ok then
      vim.notify(("CodeCompanion: %s failed: %s"):format(path, result), vim.log.levels.ERROR)
      return nil
    end
    return result
  end
  return value
end

-- Where the engine logs (opts.log_level says how much), as CodeCompanion names it.
---@return string
function M.log_file() return vim.fn.stdpath("log") .. "/codecompanion.log" end

-- Where the engine saves chats (codecompanion_py/chat/history.py).
---@return string
function M.history_dir()
  return vim.fn.stdpath("data") .. "/codecompanion_py/history"
end

-- What only the editor uses stays here (a prompt's mixed tables could not even travel).
local EDITOR_ONLY = { prompt_library = true, rules = true, display = true, extensions = true }

---@return table<string, any> config the user's config as plain data, for `config.set`
function M.payload_for_config()
  local config = {}
  for key, value in pairs(require("codecompanion_py").config) do
    if not EDITOR_ONLY[key] then
      config[key] = value
    end
  end
  local display = require("codecompanion_py").config.display
  if type(display) == "table" then -- the engine decides which edits are asked in the chat
    config.display = { diff = { threshold_for_chat = vim.tbl_get(display, "diff", "threshold_for_chat") } }
  end
  local data = require("codecompanion_py.functions").to_data(config, "", {}, prepare)
  local v = vim.version()
  local sysname = vim.uv.os_uname().sysname
  -- facts for the default system prompt (config.py's EDITOR_KEY)
  data.__editor = {
    nvim_version = ("%d.%d.%d"):format(v.major, v.minor, v.patch),
    os = sysname == "Darwin" and "Mac" or (sysname:find("Windows") and "Windows") or sysname,
    history_dir = M.history_dir(), -- saved chats
    log_file = M.log_file(), -- as logfile.py writes it
    data_dir = vim.fn.stdpath("data") .. "/codecompanion_py", -- snapshots (checkpoints, the review's baseline)
  }
  return data
end

-- The failure told last in this turn of the event loop: a command that calls the engine twice
-- (a chat opens, then sends its prompt) tells it once.
local told

-- Returns false, after telling the user, when the Python engine cannot be reached.
---@param method string a method of codecompanion_py/calls.py
---@param payload? table
---@return boolean ok
function M.notify(method, payload)
  local ok, err = pcall(function()
    ensure_config()
    send(method, payload or vim.empty_dict())
  end)
  if not ok then
    config_sent = false
    local chan = host.chan
    if chan and tostring(err):find("Invalid channel") then
      -- The host has died and its exit is not handled yet (a host that cannot start dies within
      -- milliseconds): handle it now, so the user hears why (host_exited says it) and not this.
      vim.fn.jobwait({ chan }, 1000)
      if host.chan ~= chan then
        return false
      end
    end
    local message = tostring(err):gsub("\nstack traceback:.*", "") -- Neovim's, of its own Lua: noise here
    if not message:find("^CodeCompanion: ") then
      message = "CodeCompanion: the Python engine is not available (" .. message
        .. "). Run :checkhealth codecompanion_py"
    end
    if message ~= told then
      told = message
      vim.schedule(function() told = nil end)
      vim.notify(message, vim.log.levels.ERROR)
    end
  end
  return ok
end

-- For answers to the engine: no config check, no new host (the engine that asked is the one
-- to answer), errors raised to the caller.
---@param method string
---@param payload table
function M.notify_raw(method, payload)
  if host.chan then
    vim.rpcnotify(host.chan, "notify", method, payload)
  elseif rplugin_registered() then
    vim.fn.CodeCompanionPyNotify(method, payload)
  else
    error("the Python engine is not running", 0)
  end
end

---@param method string a request method of codecompanion_py/calls.py
---@param payload? table
---@return any answer
function M.request(method, payload)
  local ok, answer = pcall(function()
    ensure_config()
    local chan = connect()
    if chan then
      return vim.rpcrequest(chan, "request", method, payload or vim.empty_dict())
    end
    return vim.fn.CodeCompanionPyRequest(method, payload or vim.empty_dict())
  end)
  if ok then
    return answer
  end
  error(tostring(answer):match("^Invalid channel") and M.GONE or answer, 0) -- Neovim's word for a closed one
end

-- What `M.request` raises when the engine's host has exited: that exit is told once, elsewhere.
M.GONE = "the engine is not running"

-- Why the engine's last host stopped without being asked to, or nil.
---@return string?
function M.last_exit()
  return host.last_exit
end

-- Whether a request would reach an engine that is up (and not start one).
---@return boolean
function M.running()
  return host.chan ~= nil or rplugin_registered()
end

-- The engine's own host while it runs ({ chan, pid, python }), for :checkhealth and tests; nil otherwise.
---@return { chan: integer, pid: integer, python: string }?
function M.host()
  if not host.chan then
    return nil
  end
  return { chan = host.chan, pid = vim.fn.jobpid(host.chan), python = host.python }
end

return M
