-- `require("codecompanion.adapters")` for configs written for CodeCompanion:
--   adapters = { http = { my_llm = function()
--     return require("codecompanion.adapters").extend("openai_compatible", { ... })
--   end } }
-- is the same as require("codecompanion_py.adapters") (see codecompanion_py/alias.lua).
return require("codecompanion_py.alias").load(
  { "lua/codecompanion/adapters/init.lua", "lua/codecompanion/adapters.lua" },
  function() return require("codecompanion_py.adapters") end
)
