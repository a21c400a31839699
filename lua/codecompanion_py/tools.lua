-- Lua-defined tools. A tool written in the user's setup() keeps its functions here; the
-- Python orchestrator gets a description (schema, which cmds/handlers/outputs exist) and
-- calls each function back by path ("cmds.1", "handlers.setup", "output.success", ...).
-- `self` is one table per run (so setup can change self.cmds or keep state), `tools.chat`
-- collects add_tool_output/add_message calls and sends them back with the answer.
local M = {}

M.defs = {} ---@type table<string, table> the callback tables, by tool name
M.configs = {} ---@type table<string, table> the user's config entries, by tool name
M.runs = {} ---@type table<integer, table> live run instances, by run id

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
  for key, value in pairs(tbl or {}) do
    out[key] = type(value) == "function" and { __lua = true } or value
  end
  return out
end

local function describe_cmds(cmds)
  local out = {}
  for i, cmd in ipairs(cmds or {}) do
    out[i] = type(cmd) == "function" and "function" or cmd
  end
  return out
end

-- Register a config entry whose `callback` is a Lua table; returns the entry as data.
function M.register(name, entry)
  local callback = entry.callback
  M.configs[name] = entry
  local data = {}
  for key, value in pairs(entry) do
    if key ~= "callback" then
      data[key] = key == "opts" and options(value) or value
    end
  end
  if type(callback) ~= "table" then
    data.callback = callback -- a Python "module:attribute" path, or a catalog tool's options
    return data
  end
  M.defs[name] = callback
  local prompt = callback.system_prompt
  if type(prompt) == "function" then
    local ok, text = pcall(prompt, callback.schema)
    prompt = ok and text or nil
  end
  data.callback = {
    __lua_tool = true,
    name = callback.name or name,
    schema = callback.schema,
    system_prompt = type(prompt) == "string" and prompt or nil,
    cmds = describe_cmds(callback.cmds),
    handlers = function_names(callback.handlers),
    output = function_names(callback.output),
    env = type(callback.env) == "function" or nil,
    opts = options(callback.opts),
  }
  return data
end

local function instance(args)
  local run = M.runs[args.run_id]
  if run then
    return run
  end
  local def = M.defs[args.tool] or {}
  local config = M.configs[args.tool] or {}
  run = setmetatable({}, { __index = def })
  run.name = def.name or args.tool
  run.args = args.call.arguments or {}
  run.function_call = args.call
  run.tool = config
  run.cmds = vim.list_extend({}, def.cmds or {})
  run.opts = vim.tbl_extend("force", {}, def.opts or {}, config.opts or {})
  M.runs[args.run_id] = run
  return run
end

local function resolve(run, tool, path)
  local scope, rest = path:match("^(%w+)%.(.+)$")
  if path == "env" then
    return run.env
  elseif scope == "cmds" then
    return run.cmds[tonumber(rest)]
  elseif scope == "config" then
    local key = rest:match("^opts%.(.+)$")
    return key and ((M.configs[tool] or {}).opts or {})[key]
  elseif scope == "opts" then
    return (M.defs[tool].opts or {})[rest]
  elseif scope == "handlers" or scope == "output" then
    return (M.defs[tool][scope] or {})[rest]
  end
end

-- Call one function of a tool; `reply(answer)` is called exactly once.
function M.invoke(chat_bufnr, args, reply)
  local run = instance(args)
  local fn = resolve(run, args.tool, args.path)
  if type(fn) ~= "function" then
    return reply({ error = ("tool %s has no function at %s"):format(args.tool, args.path) })
  end
  local collected = { outputs = {}, messages = {} }
  local tools = {
    chat = {
      bufnr = chat_bufnr,
      add_tool_output = function(_, _, for_llm, for_user)
        local shown = for_user ~= nil and tostring(for_user) or nil
        table.insert(collected.outputs, { for_llm = tostring(for_llm), for_user = shown })
      end,
      add_message = function(_, message)
        table.insert(collected.messages, { role = message.role, content = message.content })
      end,
    },
  }
  local answered = false
  local function finish(result, err)
    if answered then
      return -- output_handler called a second time: ignored, as the contract says
    end
    answered = true
    local answer = { result = result, outputs = collected.outputs, messages = collected.messages, error = err }
    if args.path == "handlers.setup" then
      answer.cmds = describe_cmds(run.cmds) -- setup may build the commands
    end
    reply(answer)
  end
  local call_args = vim.deepcopy(args.args or {})
  if args.path:match("^cmds%.") then
    local ok, result = pcall(fn, run, call_args[1] or run.args, call_args[2], function(output)
      vim.schedule(function() finish(output) end)
    end)
    if not ok then
      finish(nil, tostring(result))
    elseif result ~= nil then
      finish(result)
    end -- else: waits for output_handler
    return
  end
  local ok, result = pcall(fn, run, tools, unpack(call_args, 1, table.maxn(call_args)))
  if ok then
    finish(result)
  else
    finish(nil, tostring(result))
  end
end

function M.release(run_ids)
  for _, id in ipairs(run_ids or {}) do
    M.runs[id] = nil
  end
end

return M
