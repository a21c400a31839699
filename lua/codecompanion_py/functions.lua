-- Lua functions of the setup() table that the engine calls.
--
-- A function cannot cross the RPC, so rpc.lua sends a reference in its place:
--   { __lua_fn = <id>, path = "adapters.http.my_llm.env.api_key" }
-- The engine calls it back with the editor method `lua.call` (editor.lua) and awaits the
-- answer. Ids follow the function itself: the same function sent twice keeps its id, so a
-- chat that started before setup() ran again can still call what it holds.
--
-- Arguments come as data. A table marked `__adapter` is the adapter as CodeCompanion
-- passes it (`self`: name, formatted_name, url, env, headers, parameters, schema, opts,
-- model, ...); references inside arguments become functions again, so `self.schema.x.default`
-- is callable as in CodeCompanion.
local M = {}

local by_id = {} -- id -> { fn = function, path = string }
local id_of = setmetatable({}, { __mode = "k" }) -- function -> id
local next_id = 0

-- The reference sent in place of `fn`, found at `path` in the config.
---@param fn function
---@param path string
---@return table ref
function M.ref(fn, path)
  local id = id_of[fn]
  if not id then
    next_id = next_id + 1
    id = next_id
    id_of[fn] = id
  end
  by_id[id] = { fn = fn, path = path }
  return { __lua_fn = id, path = path }
end

-- Arguments from the engine: references become their functions again.
local function revive(value)
  if type(value) ~= "table" then
    return value
  end
  if value.__lua_fn ~= nil then
    local entry = by_id[value.__lua_fn]
    return entry and entry.fn or nil
  end
  for k, v in pairs(value) do
    value[k] = revive(v)
  end
  return value
end

-- `value` as data the engine can take: functions become references (a handler may put one in
-- `self`). `prepare`, when given, may first replace each value; `keys` are the path's parts
-- (names may hold dots: CodeCompanion's own docs name an adapter "llama.cpp").
---@param value any
---@param path string
---@param keys? string[]
---@param prepare? fun(value: any, path: string, keys: string[]): any
---@return any
function M.to_data(value, path, keys, prepare)
  keys = keys or {}
  if prepare then
    value = prepare(value, path, keys)
  end
  if type(value) == "function" then
    return M.ref(value, path)
  end
  if type(value) ~= "table" then
    return value
  end
  local out = {}
  for k, v in pairs(value) do
    local name = tostring(k)
    local sub = prepare and vim.list_extend(vim.list_slice(keys), { name }) or keys -- only `prepare` reads them
    out[k] = M.to_data(v, path == "" and name or (path .. "." .. name), sub, prepare)
  end
  return out
end
local to_data = M.to_data

-- What CodeCompanion gives a system_prompt function: the engine sends what it knows
-- (default_system_prompt, adapter, cwd), Neovim adds the rest.
local function system_prompt_context(ctx)
  local config = require("codecompanion_py").config
  local interactions = config.interactions or {}
  local date_format = (interactions.opts and interactions.opts.date_format) or "%A, %d %B %Y"
  local sysname = vim.uv.os_uname().sysname
  local v = vim.version()
  ctx.cwd = ctx.cwd or vim.fn.getcwd()
  ctx.date = tostring(os.date(date_format))
  ctx.language = (config.opts and config.opts.language) or "English"
  ctx.nvim_version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  ctx.os = sysname == "Darwin" and "Mac" or (sysname:find("Windows") and "Windows") or sysname
  ctx.project_root = vim.fs.root(ctx.cwd, { ".git", ".svn", ".hg" })
  return ctx
end

local CONTEXTS = { system_prompt = system_prompt_context }

local function pack(...)
  return { n = select("#", ...), ... }
end

-- The editor method `lua.call`: args = { id, path, args = {...}, back = {i, ...}, context = name }.
-- Answers { results = {...}, args = { [i] = <argument i after the call> } }: `back` names the
-- arguments a function may change in place (the adapter a handler receives as `self`, the
-- `tools` table of a chat_output handler).
---@param args table the engine's request: the reference and its arguments
---@return { results: any[], args: table }
function M.call(args)
  local entry = by_id[args.id]
  local path = args.path or (entry and entry.path) or "?"
  if not entry then
    error(("%s: this Lua function is no longer in the config (setup() ran again?)"):format(path), 0)
  end
  local call_args = revive(args.args or {})
  local n = args.n or #call_args
  if args.context and CONTEXTS[args.context] then
    call_args[1] = CONTEXTS[args.context](call_args[1] or {})
  end
  local packed = pack(pcall(entry.fn, unpack(call_args, 1, n)))
  if not packed[1] then
    error(("%s failed: %s"):format(path, tostring(packed[2])), 0)
  end
  local results = {}
  for i = 2, packed.n do
    results[i - 1] = packed[i] == nil and vim.NIL or to_data(packed[i], path .. "()")
  end
  local back = {}
  for _, i in ipairs(args.back or {}) do
    back[tostring(i)] = to_data(call_args[i], path) or vim.NIL
  end
  return { results = results, args = back }
end

return M
