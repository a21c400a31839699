-- require("codecompanion.config"): the live config of setup(), as extensions and configs written
-- for CodeCompanion read and change it (`config.interactions.chat.tools.mine = {...}` in an
-- extension's setup reaches the engine with the rest). The module forwards to the config of
-- the latest setup(); the tables CodeCompanion's defaults always have are made, empty, when a
-- top-level key is reached for, so `config.interactions.chat.keymaps.mine = ...` works in a
-- config that never set them. `strategies` is the older name of `interactions`.
return require("codecompanion_py.alias").load({ "lua/codecompanion/config.lua" }, function()
  local TABLES = [[interactions.chat.keymaps interactions.chat.slash_commands interactions.chat.tools.groups
    interactions.chat.tools.opts interactions.chat.opts interactions.chat.variables interactions.chat.editor_context
    interactions.inline.keymaps interactions.cmd.opts interactions.background.chat display.chat.icons
    display.chat.window display.diff display.action_palette display.inline opts adapters.http adapters.acp
    prompt_library rules mcp.servers extensions]]
  local function config()
    local current = require("codecompanion_py").config
    return current, current.interactions == nil and current.strategies ~= nil and "strategies" or "interactions"
  end
  local CONSTANTS = { LLM_ROLE = "llm", USER_ROLE = "user", SYSTEM_ROLE = "system" }
  local proxy = {}
  return setmetatable(proxy, {
    __index = function(_, key)
      if key == "constants" or key == "config" then -- CodeCompanion's module has both
        return key == "constants" and CONSTANTS or proxy
      end
      local current, interactions = config()
      key = (key == "strategies" or key == "interactions") and interactions or key
      for path in TABLES:gmatch("%S+") do
        local first, rest = path:match("^([^.]+)(.*)$")
        if (first == "interactions" and interactions or first) == key then
          local at = current
          for part in (key .. rest):gmatch("[^.]+") do
            at[part] = at[part] == nil and {} or at[part]
            if type(at[part]) ~= "table" then
              break
            end
            at = at[part]
          end
        end
      end
      return current[key]
    end,
    __newindex = function(_, key, value) config()[key] = value end,
  })
end)
