-- `require("codecompanion.adapters")` for configs written for CodeCompanion:
--   adapters = { http = { my_llm = function()
--     return require("codecompanion.adapters").extend("openai_compatible", { ... })
--   end } }
-- is the same as require("codecompanion_py.adapters").
return require("codecompanion_py.adapters")
