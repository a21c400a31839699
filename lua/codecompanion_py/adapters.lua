-- Lua helpers for adapter definitions in setup() (also `require("codecompanion.adapters")`):
--   adapters = { http = { my_llm = function()
--     return require("codecompanion_py.adapters").extend("openai_compatible", {
--       env = { url = "http://127.0.0.1:8080", api_key = "MY_KEY" },
--       schema = { model = { default = "qwen2.5-coder" } },
--     })
--   end } }
-- The result is data: the overrides plus the name of the base, resolved in Python. Functions
-- in it (an env function, a handler, a schema default) are called back by the engine.
local M = {}

-- `base` is an adapter's name (HTTP or ACP), a table (another extend() result or a whole
-- adapter), or a function returning one.
---@param base string|table|fun(): table
---@param overrides? table
---@return table adapter
function M.extend(base, overrides)
  if type(base) == "function" then
    base = base()
  end
  if type(base) == "table" then
    return vim.tbl_deep_extend("force", vim.deepcopy(base), overrides or {})
  end
  if type(base) ~= "string" then
    error("CodeCompanion: adapters.extend() needs an adapter's name or table, not " .. type(base), 2)
  end
  local out = vim.deepcopy(overrides or {})
  out.__extends = base
  return out
end

-- What handlers written for CodeCompanion use.
M.utils = {}

-- A streamed frame as JSON text: from its first `{` (drops a `data: ` prefix); a whole
-- response (a table) gives its body.
---@param data string|table
---@return string|nil
function M.utils.clean_streamed_data(data)
  if type(data) == "table" then
    return data.body
  end
  local start = data:find("{", 1, true) or 1
  return data:sub(start)
end

return M
