-- `require("codecompanion...")` for configs written for CodeCompanion.nvim: the modules under
-- lua/codecompanion/ load this plugin's, unless CodeCompanion itself is installed too; then
-- its own file (the next one on the runtimepath) is loaded instead, so this plugin never
-- hides the original. `:checkhealth codecompanion_py` warns when both are installed.
local M = {}

local ROOT = vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h:h:h")

local function ours(path)
  return vim.startswith(vim.fn.fnamemodify(path, ":p"), ROOT .. "/")
end

-- CodeCompanion's own copy of `file` (e.g. "lua/codecompanion/init.lua"), or nil.
---@param file string
---@return string|nil path
function M.original(file)
  for _, path in ipairs(vim.api.nvim_get_runtime_file(file, true)) do
    if not ours(path) then
      return path
    end
  end
end

-- The module a lua/codecompanion/ file returns: CodeCompanion's own when installed, else `build()`.
---@param files string[]
---@param build fun(): table
---@return table
function M.load(files, build)
  for _, file in ipairs(files) do
    local original = M.original(file)
    if original then
      return assert(loadfile(original))()
    end
  end
  return build()
end

return M
