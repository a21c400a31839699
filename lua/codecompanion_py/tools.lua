-- Lua-defined tools. A tool written in the user's setup() keeps its functions here; the
-- Python orchestrator gets a description (schema, which cmds/handlers/outputs exist) and
-- calls each function back by path ("cmds.1", "handlers.setup", "output.success", ...).
--
-- A tool is found as CodeCompanion 19 finds it: `extends` (a tool built on run_command),
-- `path` (a Lua module or file returning the tool), `callback` (the tool table, a function
-- returning it, or a Lua module or file; a "module:attribute" string is a Python tool), or
-- the entry itself when it holds the tool's fields (`cmds`, `schema`, ...).
--
-- Two generations of signatures are served. CodeCompanion 19 (since v18) calls
-- `cmds` as fn(tools, args, { input, output_cb, register_job }), `output.success(self,
-- stdout, meta)`, `output.error(self, stderr, meta)` and handlers and other outputs with
-- `(self, meta)`, where `meta.tools` is the tool system (`meta.tools.chat`). The older form
-- calls `cmds` as fn(self, args, input, output_handler) and outputs with `(self, tools,
-- cmd, ...)`. A tool whose functions declare the older, longer parameter lists is called
-- the older way; every `meta` also answers `meta.chat` as `tools.chat` did, so the rest fit
-- both.

---@class CodeCompanionPy.ToolDescription what the engine learns of a Lua tool's table
---@field __lua_tool true
---@field name string
---@field description string?
---@field schema table?
---@field system_prompt string?
---@field cmds (string|table)[] "function", or an argv list
---@field handlers string[] the names of its handlers
---@field output string[] the names of its outputs
---@field env boolean?
---@field opts table?
---@field extends string?
---@field build_cmd boolean?

---@class CodeCompanionPy.ToolEntry the data of a config entry, as the engine gets it
---@field opts table? with each function a `{ __lua = true }` marker
---@field enabled boolean?
---@field callback CodeCompanionPy.ToolDescription|string|{__lua_error: string}|nil
---@field description string?

---@class CodeCompanionPy.ToolInvoke the engine's `tool.invoke` question
---@field run_id integer
---@field tool string the tool's name
---@field path string the function's place in the tool: "cmds.1", "handlers.setup", ...
---@field args any[] its arguments besides `self` and `tools`/`meta`
---@field call {id: string, name: string, arguments: table}

---@class CodeCompanionPy.ToolAnswer
---@field result any what the function returned (or handed to output_cb)
---@field outputs {for_llm: string, for_user: string?}[] what it added with add_tool_output
---@field messages table[] what it added with add_message
---@field error string?
---@field cmds (string|table)[]? after handlers.setup: the commands it may have built

local M = {}

M.defs = {} ---@type table<string, table> the resolved tool tables, by tool name
M.configs = {} ---@type table<string, table> the user's config entries, by tool name
M.legacy = {} ---@type table<string, boolean> tools called with the older signatures
M.runs = {} ---@type table<integer, table> live runs {tool, tools, job}, by run id

-- Keys of a config entry that describe the tool itself rather than configure it.
local TOOL_KEYS = {
  build_cmd = true,
  callback = true,
  cmds = true,
  env = true,
  extends = true,
  gates = true,
  handlers = true,
  output = true,
  schema = true,
  system_prompt = true,
}

local function notify_error(message)
  vim.notify("CodeCompanion: " .. message, vim.log.levels.ERROR)
end

local function function_names(tbl)
  local names = {}
  for key, value in pairs(tbl or {}) do
    if type(value) == "function" then
      table.insert(names, key)
    end
  end
  return names
end

-- Option values that are functions become markers the engine turns into call-backs.
local function options(tbl)
  local out = {}
  for key, value in pairs(type(tbl) == "table" and tbl or {}) do
    out[key] = type(value) == "function" and { __lua = true } or value
  end
  return out
end

-- CodeCompanion's command entries may be `{ cmd = "make test" }` or `{ cmd = {...}, flag = ... }`.
local function describe_cmds(cmds)
  local out = {}
  for i, cmd in ipairs(cmds or {}) do
    if type(cmd) == "function" then
      out[i] = "function"
    elseif type(cmd) == "table" and cmd.cmd ~= nil then
      out[i] = type(cmd.cmd) == "string" and vim.split(cmd.cmd, " ", { trimempty = true }) or cmd.cmd
    else
      out[i] = cmd
    end
  end
  return out
end

local function params(fn)
  return type(fn) == "function" and debug.getinfo(fn, "u").nparams or 0
end

-- The older signatures take more parameters where they differ from v18's.
local function is_legacy(tool)
  for _, cmd in ipairs(tool.cmds or {}) do
    if params(cmd) >= 4 then
      return true
    end
  end
  local output = tool.output or {}
  return params(output.success) >= 4
    or params(output.error) >= 4
    or params(output.rejected) >= 3
    or params(output.cancelled) >= 3
end

-- A Lua tool from a file path or a module name; nil when `path` names neither (then a
-- `callback` string is a Python tool's).
local function load_lua(path)
  local file = vim.fs.normalize(path)
  if file:match("%.lua$") or vim.uv.fs_stat(file) then
    local chunk, err = loadfile(file)
    if not chunk then
      error(("cannot load %s: %s"):format(path, err), 0)
    end
    return chunk()
  end
  if path:match("^[%w_.%-]+$") and (#vim.loader.find(path) > 0 or package.searchpath(path, package.path)) then
    return require(path)
  end
end

-- CodeCompanion's own built-ins are ours under the same names.
local function builtin(path)
  return path:match("^interactions%.chat%.tools%.builtin%.") or path:match("^strategies%.chat%.agents%.tools%.")
end

-- The tool table of a config entry; nil for a built-in or a Python tool.
local function resolve(entry)
  local tool
  if entry.extends then
    tool = entry
  elseif type(entry.path) == "string" and not builtin(entry.path) then
    tool = load_lua(entry.path)
    if tool == nil then
      error(("cannot find the Lua module or file %q (path)"):format(entry.path), 0)
    end
  elseif type(entry.callback) == "function" then
    tool = entry.callback()
  elseif type(entry.callback) == "table" then
    tool = entry.callback
  elseif type(entry.callback) == "string" then
    tool = load_lua(entry.callback)
    if tool == nil then
      return nil -- "module:attribute": the engine imports it
    end
  elseif entry.cmds or entry.schema or entry.handlers or entry.output then
    tool = entry
  else
    return nil
  end
  if type(tool) ~= "table" then
    error(("the tool must be a table, got %s"):format(type(tool)), 0)
  end
  return tool
end

local function system_prompt(tool)
  local prompt = tool.system_prompt
  if type(prompt) == "function" then
    local ok, text = pcall(prompt, tool.schema)
    if not ok then
      notify_error(("tool %s: system_prompt failed: %s"):format(tostring(tool.name), text))
    end
    prompt = ok and text or nil
  end
  return type(prompt) == "string" and prompt or nil
end

---@return CodeCompanionPy.ToolDescription
local function describe(name, tool)
  return {
    __lua_tool = true,
    name = tool.name or name,
    description = type(tool.description) == "string" and tool.description or nil,
    schema = tool.schema,
    system_prompt = system_prompt(tool),
    cmds = describe_cmds(tool.cmds),
    handlers = function_names(tool.handlers),
    output = function_names(tool.output),
    gates = function_names(tool.gates), -- gates.judge_context: what the tools judge vets
    env = type(tool.env) == "function" or nil,
    opts = options(tool.opts),
    extends = tool.extends,
    build_cmd = type(tool.build_cmd) == "function" or nil,
  }
end

-- Register a config entry (`*.chat.tools.<name>`); returns the entry as data for the engine.
---@param name string the tool's name in the config
---@param entry table the user's config entry
---@return CodeCompanionPy.ToolEntry
function M.register(name, entry)
  M.configs[name] = entry
  M.defs[name], M.legacy[name] = nil, nil
  local data = {}
  for key, value in pairs(entry) do
    if key == "opts" then
      data.opts = options(value)
    elseif not TOOL_KEYS[key] and type(value) ~= "function" then
      data[key] = value
    end
  end
  if type(entry.enabled) == "function" then -- CodeCompanion asks per chat; here once, at setup
    local ok, enabled = pcall(entry.enabled, {})
    data.enabled = ok and enabled and true or false
  end
  local ok, tool = pcall(resolve, entry)
  if not ok then
    local message = tostring(tool)
    notify_error(("tools.%s: %s"):format(name, message))
    data.callback = { __lua_error = message }
    return data
  end
  if tool == nil then
    data.callback = type(entry.callback) == "string" and entry.callback or nil
    return data
  end
  M.defs[name] = tool
  M.legacy[name] = is_legacy(tool)
  data.callback = describe(name, tool)
  if data.description == nil then
    data.description = data.callback.description
  end
  return data
end

-- CodeCompanion's tool system as a tool sees it (`meta.tools`, `self` in v18+ cmds):
-- the chat, the running tool and the batch's status.
local function tool_system(run, chat_bufnr)
  local chat = { bufnr = chat_bufnr, id = chat_bufnr }
  function chat.add_tool_output(_, _, for_llm, for_user)
    local shown = for_user ~= nil and tostring(for_user) or nil
    table.insert(run.collected.outputs, { for_llm = tostring(for_llm), for_user = shown })
  end
  function chat.add_message(_, message)
    table.insert(run.collected.messages, { role = message.role, content = message.content })
  end
  return {
    chat = chat,
    bufnr = chat_bufnr,
    tool = run.tool,
    status = "success",
    stdout = {},
    stderr = {},
    constants = { STATUS_ERROR = "error", STATUS_SUCCESS = "success" },
  }
end

local function instance(chat_bufnr, args)
  local run = M.runs[args.run_id]
  if run then
    return run
  end
  local def = M.defs[args.tool] or {}
  local config = M.configs[args.tool] or {}
  local tool = setmetatable({}, { __index = def })
  tool.name = def.name or args.tool
  tool.args = args.call.arguments or {}
  tool.function_call = args.call
  tool.tool = config
  tool.cmds = vim.deepcopy(def.cmds or {})
  tool.opts = vim.tbl_extend("force", {}, def.opts or {}, config.opts or {})
  -- originals: what cmds returned as `data`, by status, so outputs get the Lua values
  -- themselves (an object with methods), not their copies as data
  run = { tool = tool, collected = { outputs = {}, messages = {} }, originals = { success = {}, error = {} } }
  run.tools = tool_system(run, chat_bufnr)
  run.tools.tool = tool
  M.runs[args.run_id] = run
  return run
end

-- `meta` for handlers and outputs: `meta.tools` (v18+), and the tool system's own fields
-- on `meta` itself, as the older `tools` argument had them.
local function meta(run, extra)
  extra.tools = run.tools
  return setmetatable(extra, { __index = run.tools })
end

-- v18+ hands outputs over as a list, or nil when there is none; the list also answers
-- `.chat` for an older function written as (self, tools, ...).
local function output_list(run, list)
  if type(list) ~= "table" or #list == 0 then
    return nil
  end
  return setmetatable(list, { __index = run.tools })
end

local function resolve_fn(run, tool_name, path)
  local scope, rest = path:match("^(%w+)%.(.+)$")
  local def = M.defs[tool_name] or {}
  if path == "env" then
    return run.tool.env
  elseif path == "build_cmd" then
    return def.build_cmd
  elseif scope == "cmds" then
    return run.tool.cmds[tonumber(rest)]
  elseif scope == "config" then
    local key = rest:match("^opts%.(.+)$")
    return key and ((M.configs[tool_name] or {}).opts or {})[key]
  elseif scope == "opts" then
    return (def.opts or {})[rest]
  elseif scope == "handlers" or scope == "output" or scope == "gates" then
    return (def[scope] or {})[rest]
  end
end

-- The cmd the engine refers to ({lua = "cmds.1"}, an argv list, or nil), as the tool has it.
local function cmd_of(run, cmd)
  if type(cmd) == "table" and type(cmd.lua) == "string" then
    return run.tool.cmds[tonumber(cmd.lua:match("^cmds%.(%d+)$") or "")]
  end
  return cmd
end

-- The arguments a function at `path` is called with (after `self`).
local function call_args(run, legacy, path, wire)
  local tools = run.tools
  if path == "output.success" or path == "output.error" then
    local cmd, list, stdout = cmd_of(run, wire[1]), wire[2], wire[3]
    local originals = run.originals[path == "output.error" and "error" or "success"]
    list = type(list) == "table" and #list == #originals and originals or list
    if path == "output.error" then
      tools.status = "error"
      vim.list_extend(tools.stderr, list or {})
    else
      tools.status = "success"
    end
    if legacy then
      return { meta(run, { cmd = cmd }), cmd, list, stdout }, 4
    end
    return { output_list(run, list), meta(run, { cmd = cmd }) }, 2
  elseif path == "output.rejected" then
    local cmd, opts = cmd_of(run, wire[1]), wire[2] or {}
    return { meta(run, { cmd = cmd, opts = opts }), cmd, opts }, 3
  elseif path == "output.cancelled" then
    local cmd = cmd_of(run, wire[1])
    return { meta(run, { cmd = cmd }), cmd }, 2
  elseif path:match("^opts%.") or path:match("^config%.") then
    return { tools }, 1 -- CodeCompanion: require_approval_before(tool, tools)
  end
  return { meta(run, {}), unpack(wire, 1, table.maxn(wire)) }, 1 + table.maxn(wire)
end

-- v18+ cmds get the tool system as `self`; what it lacks (args, opts, state a tool keeps
-- on itself) is read from and written to the tool.
local function cmd_self(run)
  return setmetatable({}, {
    __index = function(_, key)
      local value = run.tools[key]
      if value == nil then
        return run.tool[key]
      end
      return value
    end,
    __newindex = run.tool,
  })
end

-- Call one function of a tool; `reply(answer)` is called exactly once.
---@param chat_bufnr integer the chat the run belongs to
---@param args CodeCompanionPy.ToolInvoke
---@param reply fun(answer: CodeCompanionPy.ToolAnswer)
function M.invoke(chat_bufnr, args, reply)
  local run = instance(chat_bufnr, args)
  local tool = run.tool
  local fn = resolve_fn(run, args.tool, args.path)
  if type(fn) ~= "function" then
    return reply({ error = ("tool %s has no function at %s"):format(args.tool, args.path) })
  end
  run.collected = { outputs = {}, messages = {} }
  local collected = run.collected
  local answered = false
  local function finish(result, err)
    if answered then
      return -- output_cb called a second time: ignored, as the contract says
    end
    answered = true
    local answer = { result = result, outputs = collected.outputs, messages = collected.messages, error = err }
    if args.path == "handlers.setup" then
      answer.cmds = describe_cmds(tool.cmds) -- setup may build the commands
    end
    reply(answer)
  end
  local wire = vim.deepcopy(args.args or {})
  local legacy = M.legacy[args.tool]
  local ok, result
  if args.path == "build_cmd" then
    ok, result = pcall(fn, wire[1] or tool.args)
  elseif args.path == "env" then
    ok, result = pcall(fn, tool)
  elseif args.path:match("^cmds%.") then
    local input = wire[2]
    local function output_cb(output)
      local kept = type(output) == "table" and run.originals[output.status]
      if kept and output.data ~= nil then
        table.insert(kept, output.data)
      end
      vim.schedule(function()
        finish(output)
      end)
    end
    if legacy then
      ok, result = pcall(fn, tool, wire[1] or tool.args, input, output_cb)
    else
      ok, result = pcall(fn, cmd_self(run), wire[1] or tool.args, {
        input = input ~= nil and { status = "success", data = input } or nil,
        output_cb = output_cb,
        register_job = function(job)
          run.job = job
        end,
      })
    end
    if ok and result == nil then
      return -- waits for output_cb
    elseif ok and type(result) == "table" and run.originals[result.status] and result.data ~= nil then
      table.insert(run.originals[result.status], result.data)
    end
  else
    local list, n = call_args(run, legacy, args.path, wire)
    ok, result = pcall(fn, tool, unpack(list, 1, n))
  end
  if ok then
    finish(result)
  else
    finish(nil, tostring(result))
  end
end

-- Forget runs the engine has finished with, stopping a job a command registered.
---@param run_ids integer[]?
function M.release(run_ids)
  for _, id in ipairs(run_ids or {}) do
    local run = M.runs[id]
    if run and run.job then
      pcall(run.job.kill, run.job, "sigterm") -- a command a cmd started and registered
    end
    M.runs[id] = nil
  end
end

return M
