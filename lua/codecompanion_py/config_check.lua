-- Which of CodeCompanion 19's options do nothing here. A config pasted from CodeCompanion
-- loads as it is; every key it sets that this plugin does not honour is named once, in one
-- notice at setup(), so nothing is silently ignored. What is honoured is options.lua's
-- table, the one the code reading the options consults too.
local options = require("codecompanion_py.options")

local M = {}

local reported = {} ---@type table<string, boolean> keys already named in this session

---@class UnsupportedOption
---@field key string  the option's dotted path
---@field why string  what is done instead, or why nothing is

-- The keys of `opts` that do nothing here, by their paths.
---@param opts table|nil what setup() was given
---@return UnsupportedOption[]
function M.unsupported(opts)
  local found = {}
  local function walk(value, spec, path)
    if spec == true or spec == options.ANY then
      return
    end
    if type(spec) == "string" then
      if value ~= false then -- turning off what is not here anyway is no loss
        table.insert(found, { key = path, why = spec })
      end
      return
    end
    if type(value) ~= "table" or vim.islist(value) then
      if type(value) ~= "table" and value ~= false then -- false turns a feature or keymap off
        table.insert(found, { key = path, why = "expects a table, not " .. type(value) })
      end
      return
    end
    for key, child in pairs(value) do
      local name = tostring(key)
      local where = path == "" and name or (path .. "." .. name)
      local sub = options.child(spec, name)
      if sub == nil then
        table.insert(found, { key = where, why = "not a CodeCompanion option" })
      else
        walk(child, sub, where)
      end
    end
  end
  walk(opts or {}, options.SPEC, "")
  table.sort(found, function(a, b) return a.key < b.key end)
  return found
end

-- Name, once per session, each key of `opts` that does nothing here, in one notice.
---@param opts table|nil what setup() was given
---@return string[] lines the lines shown (none: no notice)
function M.report(opts)
  local lines = {}
  for _, item in ipairs(M.unsupported(opts)) do
    if not reported[item.key] then
      reported[item.key] = true
      table.insert(lines, ("  %s: %s"):format(item.key, item.why))
    end
  end
  if #lines > 0 then
    vim.notify("CodeCompanion: these options have no effect here:\n" .. table.concat(lines, "\n"),
      vim.log.levels.WARN)
  end
  return lines
end

return M
