-- Lua helpers for adapter definitions in setup():
--   adapters = { http = { my_llm = function()
--     return require("codecompanion_py.adapters").extend("openai_compatible", {
--       env = { url = "http://127.0.0.1:8080", api_key = "MY_KEY" },
--       schema = { model = { default = "qwen2.5-coder" } },
--     })
--   end } }
-- The result is data: the overrides plus the name of the base, resolved in Python.
local M = {}

function M.extend(base, overrides)
  local out = vim.deepcopy(overrides or {})
  out.__extends = base
  return out
end

return M
