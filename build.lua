-- Installs the Python engine (a venv at <plugin root>/.venv with this plugin in it): the work is
-- codecompanion_py/install.py's, run by the base Python (`python3`, else `python`, or
-- vim.g.codecompanion_py_build_python); this relays its progress without blocking Neovim: in
-- lazy.nvim's coroutine (its build step) through coroutine.yield; from :CodeCompanionInstall,
-- `:luafile` or `loadfile()()` through vim.notify; from `nvim -l build.lua` printed, exit 1 on failure.
-- vim.g.codecompanion_py_build: "running", "done", "failed"; User CodeCompanionPyBuilt fires at the end.
local LEVELS = vim.log.levels
local ROOT = vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h")
local PYTHON = ROOT .. (vim.fn.has("win32") == 1 and "/.venv/Scripts/python.exe" or "/.venv/bin/python")
local TITLE = "CodeCompanion"

---@class codecompanion_py.Built the data of `User CodeCompanionPyBuilt`
---@field ok boolean whether the engine is installed
---@field message string what happened, for the user
---@field python string the venv's Python

---@class codecompanion_py.BuildEvent one line the installer reports (its level a name until decoded)
---@field msg string
---@field level integer a vim.log.levels: TRACE for a tool's output, INFO for a step
---@field ok? boolean on the last line only: whether the engine is installed

---@return string? python the Python that runs the installer
local function base_python()
  local chosen = vim.g.codecompanion_py_build_python
  if type(chosen) == "string" and chosen ~= "" then return vim.fn.expand(chosen) end
  return vim.tbl_filter(function(name) return vim.fn.executable(name) == 1 end, { "python3", "python", PYTHON })[1]
end

-- Runs the installer, passing each line it reports to `on_event` (in a fast callback).
---@param on_event fun(event: codecompanion_py.BuildEvent)
local function spawn(on_event)
  local python, pending, ended = base_python(), "", false
  local function fail(msg) on_event({ msg = msg, level = LEVELS.ERROR, ok = false }) end
  local function on_line(line)
    local ok, event = pcall(vim.json.decode, line)
    event = ok and type(event) == "table" and event or { msg = line }
    event.level, ended = LEVELS[event.level] or LEVELS.TRACE, ended or event.ok ~= nil
    on_event(event)
    return ""
  end
  local started, err = pcall(vim.system, { python, "-I", ROOT .. "/codecompanion_py/install.py", ROOT }, {
    stdout = function(_, data) pending = (pending .. (data or "")):gsub("(.-)\r?\n", on_line) end,
  }, function(out)
    if not ended then
      fail(("the installer failed (exit code %d):\n%s"):format(out.code, vim.trim(out.stderr or "")))
    end
  end)
  if not started then
    fail(python and tostring(err)
      or "no python3 on PATH: install Python 3.10 or newer (or set vim.g.codecompanion_py_build_python)")
  end
end

-- Shows an event through `tell`; the last one first sets vim.g.codecompanion_py_build and fires the autocmd.
local function deliver(tell, event)
  if event.ok ~= nil then
    vim.g.codecompanion_py_build = event.ok and "done" or "failed"
    local data = { ok = event.ok, message = event.msg, python = PYTHON } ---@type codecompanion_py.Built
    pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "CodeCompanionPyBuilt", modeline = false, data = data })
  end
  tell(event)
end

-- In lazy.nvim's coroutine: its task sleeps until news (else yields nil each tick); failing is an error.
local function in_lazy()
  local lazy_ok, Async = pcall(require, "lazy.async")
  local task = lazy_ok and type(Async.running) == "function" and Async.running() or nil
  local queue = {}
  local function tell(shown)
    if shown.ok == false then error(shown.msg, 0) end
    if coroutine.yield(shown.msg and shown) == "abort" then
      deliver(tell, { msg = "aborted", level = LEVELS.ERROR, ok = false })
    end
  end
  spawn(function(news)
    table.insert(queue, news)
    return task and task.resume and vim.schedule(function() task:resume() end)
  end)
  repeat
    local event = table.remove(queue, 1)
    if event then
      deliver(tell, event)
    elseif task and task.suspend then
      task:suspend()
    else
      tell({}) -- yields nil: a tick with nothing to show
    end
  until event and event.ok ~= nil
end

if vim.g.codecompanion_py_build == "running" then
  return coroutine.running() and error("an install is already running", 0)
    or vim.notify(TITLE .. ": an install is already running", LEVELS.WARN, { title = TITLE })
end
vim.g.codecompanion_py_build = "running"
if coroutine.running() then return in_lazy() end
local script = vim.fn.index(vim.v.argv, "-l") > 0
local function tell(event) -- printed in a shell, else notified (a tool's output is not)
  if script then
    io.stdout:write((event.level == LEVELS.TRACE and "  " or "") .. event.msg .. "\n")
  elseif event.level > LEVELS.TRACE then
    vim.notify(TITLE .. ": " .. event.msg, event.level, { title = TITLE })
  end
end
spawn(function(event) vim.schedule(function() deliver(tell, event) end) end)
if script then
  vim.wait(30 * 60 * 1000, function() return vim.g.codecompanion_py_build ~= "running" end, 50)
  os.exit(vim.g.codecompanion_py_build == "done" and 0 or 1)
end
