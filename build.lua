-- Installs codecompanion-py's Python engine: a venv at <plugin root>/.venv with this plugin
-- pip-installed into it (editable, so the Python code is always this checkout's). There is
-- nothing to register and no restart: the next command starts the engine from that venv.
--
-- It never blocks the editor, wherever it runs from:
--   * lazy.nvim runs this file by itself after installing or updating the plugin (or with
--     `build = "build.lua"`), inside a coroutine: progress goes to lazy's window through
--     coroutine.yield, and lazy waits for the end.
--   * :CodeCompanionInstall (or `:luafile build.lua`, or a plugin manager's hook calling
--     `loadfile(dir .. "/build.lua")()`) runs it in the background, reporting through vim.notify.
--   * `nvim -l build.lua` in a shell waits for the end, prints progress, and fails with exit
--     code 1 when the install fails.
-- The venv is made by `python3` (else `python`); vim.g.codecompanion_py_build_python names
-- another. vim.g.codecompanion_py_build is "running", "done" or "failed", and the
-- `User CodeCompanionPyBuilt` autocmd fires at the end with data { ok, message, python }.
local LEVELS = vim.log.levels
local ROOT = vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h")
local WINDOWS = vim.fn.has("win32") == 1
local VENV = ROOT .. "/.venv"
local PYTHON = VENV .. (WINDOWS and "/Scripts/python.exe" or "/bin/python")
local TITLE = "CodeCompanion"

local function base_python()
  local chosen = vim.g.codecompanion_py_build_python
  if type(chosen) == "string" and chosen ~= "" then
    return vim.fn.expand(chosen)
  end
  for _, name in ipairs({ "python3", "python" }) do
    if vim.fn.executable(name) == 1 then
      return name
    end
  end
end

local function in_script_mode()
  for i, a in ipairs(vim.v.argv) do
    if a == "-l" and i > 1 then
      return true
    end
  end
  return false
end

-- How this run reports and waits. Inside lazy.nvim's coroutine it reports through
-- coroutine.yield and sleeps until a process has news (lazy's task is suspended, else the
-- coroutine yields on each tick as lazy's docs say); elsewhere it runs in a coroutine of its
-- own, woken by the processes' callbacks.
local function driver()
  local d = {}
  local co = coroutine.running()
  local lazy_ok, Async = pcall(require, "lazy.async")
  local task = co and lazy_ok and type(Async.running) == "function" and Async.running() or nil
  local function yield(msg)
    if coroutine.yield(msg) == "abort" then
      error("aborted", 0)
    end
  end
  if co then
    d.progress = function(msg) yield({ msg = msg, level = LEVELS.TRACE }) end
    d.step = function(msg) yield({ msg = msg, level = LEVELS.INFO }) end
    d.wait = function()
      if task and task.suspend then
        task:suspend()
      else
        yield(nil)
      end
    end
    d.wake = function()
      if task and task.resume then
        vim.schedule(function() task:resume() end)
      end
    end
    d.mode = "lazy"
  else
    local script = in_script_mode()
    d.progress = function(msg)
      if script then
        io.stdout:write("  " .. msg .. "\n")
      end
    end
    d.step = function(msg)
      if script then
        io.stdout:write(msg .. "\n")
      else
        vim.notify(TITLE .. ": " .. msg, LEVELS.INFO, { title = TITLE })
      end
    end
    d.wait = function() coroutine.yield() end
    d.wake = function()
      vim.schedule(function()
        if d.co and coroutine.status(d.co) == "suspended" then
          local ok, err = coroutine.resume(d.co)
          if not ok then
            vim.notify(TITLE .. ": the install failed: " .. tostring(err), LEVELS.ERROR, { title = TITLE })
          end
        end
      end)
    end
    d.mode = script and "script" or "background"
  end
  return d
end

-- Runs a command to its end, passing each line of its output to `d.progress`; returns ok and
-- the last lines of its output.
local function run(d, cmd)
  local queue, tail, partial, result = {}, {}, { "", "" }, nil
  local function reader(stream)
    return function(_, data)
      if not data then
        return
      end
      local text = partial[stream] .. data:gsub("\r", "\n")
      local last = 1
      for line, stop in text:gmatch("([^\n]*)\n()") do
        if line ~= "" then
          table.insert(queue, line)
        end
        last = stop
      end
      partial[stream] = text:sub(last)
      d.wake()
    end
  end
  local env = { PYTHONUNBUFFERED = "1", PIP_NO_INPUT = "1", PIP_DISABLE_PIP_VERSION_CHECK = "1" }
  local ok, err = pcall(vim.system, cmd, { cwd = ROOT, env = env, stdout = reader(1), stderr = reader(2) },
    function(out)
      result = out
      d.wake()
    end)
  if not ok then
    return false, { tostring(err) }
  end
  while true do
    while #queue > 0 do
      local line = table.remove(queue, 1)
      table.insert(tail, line)
      if #tail > 25 then
        table.remove(tail, 1)
      end
      d.progress(line)
    end
    if result then
      break
    end
    d.wait()
  end
  for _, rest in ipairs(partial) do
    if vim.trim(rest) ~= "" then
      table.insert(tail, rest)
    end
  end
  return result.code == 0 and result.signal == 0, tail
end

local function build(d)
  local started = (vim.uv or vim.loop).hrtime()
  -- A venv that is there but has no pip (one that `python3 -m venv` left half made, as Debian's
  -- python3 does without python3-venv) is made anew, like a missing one.
  if vim.fn.executable(PYTHON) ~= 1 or not run(d, { PYTHON, "-m", "pip", "--version" }) then
    local python = base_python()
    if not python then
      return false, "no python3 on PATH: install Python 3.10 or newer (or set vim.g.codecompanion_py_build_python)"
    end
    d.step(("creating %s with %s"):format(VENV, python))
    -- --clear: a venv whose Python is gone (a removed or upgraded interpreter) is made anew
    local cmd = { python, "-m", "venv", VENV }
    if vim.fn.isdirectory(VENV) == 1 then
      table.insert(cmd, 4, "--clear")
    end
    local ok, tail = run(d, cmd)
    if not ok then
      return false, ("could not create %s:\n%s"):format(VENV, table.concat(tail, "\n"))
    end
  end
  d.step("installing the engine and its dependencies into " .. VENV)
  local ok, tail = run(d, { PYTHON, "-m", "pip", "install", "--editable", ROOT })
  if not ok then
    return false, ("pip could not install the engine:\n%s\n(a broken venv can be removed: %s)")
      :format(table.concat(tail, "\n"), VENV)
  end
  ok, tail = run(d, { PYTHON, "-c", "import codecompanion_py.nvim.host" })
  if not ok then
    return false, "the engine does not import:\n" .. table.concat(tail, "\n")
  end
  return true, ("the Python engine is installed (%.1f s); commands use it from now on")
    :format(((vim.uv or vim.loop).hrtime() - started) / 1e9)
end

local function finish(d, ok, message)
  vim.g.codecompanion_py_build = ok and "done" or "failed"
  pcall(vim.api.nvim_exec_autocmds, "User", {
    pattern = "CodeCompanionPyBuilt",
    modeline = false,
    data = { ok = ok, message = message, python = PYTHON },
  })
  if d.mode == "lazy" then
    if not ok then
      error(message, 0) -- lazy shows the task as failed, with the message
    end
    d.step(message)
  elseif d.mode == "script" then
    io.stdout:write(message .. "\n")
  else
    vim.notify(TITLE .. ": " .. message, ok and LEVELS.INFO or LEVELS.ERROR, { title = TITLE })
  end
end

local function main()
  local d = driver()
  if vim.g.codecompanion_py_build == "running" then
    local message = "an install is already running"
    if d.mode == "lazy" then
      error(message, 0)
    end
    vim.notify(TITLE .. ": " .. message, LEVELS.WARN, { title = TITLE })
    return
  end
  vim.g.codecompanion_py_build = "running"
  if d.mode == "lazy" then
    local ok, result, message = pcall(build, d)
    finish(d, ok and result, ok and message or tostring(result))
    return
  end
  d.co = coroutine.create(function()
    local ok, result, message = pcall(build, d)
    finish(d, ok and result, ok and message or tostring(result))
  end)
  local ok, err = coroutine.resume(d.co)
  if not ok then
    vim.g.codecompanion_py_build = "failed"
    error(err, 0)
  end
  if d.mode == "script" then
    vim.wait(30 * 60 * 1000, function() return coroutine.status(d.co) == "dead" end, 50)
    if vim.g.codecompanion_py_build ~= "done" then
      os.exit(1)
    end
  end
end

main()
