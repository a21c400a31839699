-- Which of CodeCompanion 19's options do nothing here. A config pasted from CodeCompanion
-- loads as it is. A key set to what CodeCompanion does by default, or to what behaves the same
-- here (same_here.json), is left alone; every other key that this plugin does not honour is
-- named: all in :checkhealth, and in one line once startup is over, once per distinct set of
-- keys (remembered in stdpath("state")), so nothing is silently ignored and no start is held up.
-- What is honoured is options.lua's table, the one the code reading the options consults too.
local options = require("codecompanion_py.options")

local M = {}

local SAME_FILE = debug.getinfo(1, "S").source:sub(2):gsub("config_check%.lua$", "same_here.json")
local same ---@type table<string, any>|nil

-- Whether `value` is `here` or a part of it (CodeCompanion merges setup() over its defaults).
local function within(value, here)
  if type(value) ~= "table" or type(here) ~= "table" then
    return value == here
  end
  for key, child in pairs(value) do
    if not within(child, here[key]) then
      return false
    end
  end
  return true
end

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
    if type(spec) == "string" then -- false turns off what is not here anyway: no loss
      same = same or vim.json.decode(table.concat(vim.fn.readfile(SAME_FILE), "\n"))
      if value ~= false and not within(value, same[(path:gsub("^strategies%.", "interactions."))]) then
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

-- One line naming the keys of `opts` that do nothing here, once startup is over (scheduled),
-- unless this same set was named before (:checkhealth always lists them, with the reasons).
---@param opts table|nil what setup() was given
function M.report(opts)
  local failed = require("codecompanion_py.extensions").failed -- the extensions of this setup() that did not load
  vim.schedule(function()
    local keys = vim.tbl_map(function(item) return item.key end, M.unsupported(opts))
    local seen = vim.fn.stdpath("state") .. "/codecompanion_py_unsupported"
    local digest = vim.fn.sha256(table.concat(vim.list_extend(vim.list_extend({}, failed), keys), "\n"))
    if #keys + #failed == 0 or (vim.fn.filereadable(seen) == 1 and vim.fn.readfile(seen)[1] == digest) then
      return
    end
    vim.fn.mkdir(vim.fn.stdpath("state"), "p")
    pcall(vim.fn.writefile, { digest }, seen)
    local ignores = #keys > 0 and "ignores " .. table.concat(keys, ", ") or nil
    local line = #failed == 0 and "CodeCompanion " .. ignores
      or "CodeCompanion: " .. table.concat(vim.list_extend(vim.list_extend({}, failed), { ignores }), "; ")
    local tail = " (:checkhealth codecompanion)"
    local room = vim.v.echospace - #tail -- one screen line: a second would ask for ENTER
    if vim.fn.strdisplaywidth(line) > room then
      line = vim.fn.strcharpart(line, 0, room - 1) .. "…"
    end
    vim.notify(line .. tail, #failed > 0 and vim.log.levels.ERROR or vim.log.levels.WARN)
  end)
end

return M
