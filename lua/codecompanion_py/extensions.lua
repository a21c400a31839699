-- CodeCompanion's extensions: `extensions = { name = { enabled, opts, callback } }` in setup()
-- and `require("codecompanion").register_extension(name, extension)`. An extension is a table
-- with `setup(opts)` and optional `exports`, found as `callback` (a table, a module name, or a
-- function returning one) or at `codecompanion._extensions.<name>` on the runtimepath. Its
-- exports are `require("codecompanion").extensions.<name>`. One that fails is told in one
-- line naming what it used, and the rest of the config loads.
local M = {}

local exports = {} ---@type table<string, table>
M.failed = {} ---@type string[] what setup()'s extensions that did not load said, for config_check's one line

-- require("codecompanion").extensions: the exports by name (nil for one not loaded).
M.manager = setmetatable({}, {
  __index = function(_, name) return exports[name] end,
  __newindex = function() error("require('codecompanion').extensions is read-only", 2) end,
})

-- One line saying what an extension's error means here: a module or a method this plugin
-- does not have is named as such.
---@param err any
---@return string
function M.explain(err)
  local text = tostring(err)
  local module = text:match("module '([^']+)' not found")
  if module then
    return ("it uses require(%q), which codecompanion-py does not provide"):format(module)
  end
  local method = text:match("attempt to call method '([^']+)'")
    or text:match("attempt to call a nil value %(method '([^']+)'%)")
  if method then
    return ("it calls :%s(), which codecompanion-py does not have"):format(method)
  end
  return (text:gsub("\nstack traceback:.*", ""):gsub("\n.*", ""))
end

-- Tell the user in one line that `what` failed, and why (or, `later`, keep the line for the
-- notice after startup: two lines would ask for ENTER); the whole error goes to the log.
---@param what string e.g. "extension history did not load"
---@param err any
---@param later? boolean
function M.report(what, err, later)
  require("codecompanion.utils.log"):error("%s: %s", what, tostring(err))
  local line = what .. ": " .. M.explain(err)
  if later then
    table.insert(M.failed, line)
  else
    vim.notify("CodeCompanion: " .. line, vim.log.levels.ERROR)
  end
end

---@param name string
---@param callback? string|table|fun(): table
---@return table extension
local function resolve(name, callback)
  local extension = callback
  if type(callback) == "string" then
    extension = require(callback)
  elseif type(callback) == "function" then
    extension = callback()
  elseif callback == nil then
    extension = require("codecompanion._extensions." .. name)
  end
  if type(extension) ~= "table" or type(extension.setup) ~= "function" then
    error("it is not a table with a setup function", 0)
  end
  return extension
end

-- Set up one extension and keep its exports; false when it failed, after `M.report`.
---@param name string
---@param extension string|table|fun(): table|nil as `callback` is given
---@param opts? table
---@param later? boolean
---@return boolean ok
function M.register(name, extension, opts, later)
  local ok, err = pcall(function()
    local ext = resolve(name, extension)
    ext.setup(opts or {})
    exports[name] = ext.exports
  end)
  if ok then
    return true
  end
  local what = "extension " .. name .. " did not load"
  if tostring(err):find("module 'codecompanion._extensions." .. name .. "' not found", 1, true) then
    what = "extension " .. name .. " is not installed"
    err = "no codecompanion._extensions." .. name .. " on the runtimepath"
  end
  M.report(what, err, later)
  return false
end

-- Load the extensions of the config, in name order (pairs() order would change from run to run).
---@param config? table `extensions` of setup()
function M.load(config)
  if type(config) ~= "table" then
    return
  end
  M.failed = {}
  local names = vim.tbl_keys(config)
  table.sort(names)
  for _, name in ipairs(names) do
    local entry = config[name]
    if type(entry) == "table" and entry.enabled ~= false then
      M.register(name, entry.callback, entry.opts, true)
    end
  end
end

return M
