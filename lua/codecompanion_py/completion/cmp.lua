-- nvim-cmp's source for edit predictions, registered as "codecompanion_completion" when
-- predictions are turned on with nvim-cmp loaded (or by `register()`); list it in cmp's sources.
-- luacheck: no self (cmp calls these as methods; they need no state)
local completion = require("codecompanion_py.completion")

local M = {}
M.NAME = "codecompanion_completion"

---@return table
function M.new()
  return setmetatable({}, { __index = M })
end

---@return boolean
function M:is_available() return completion.wanted(vim.api.nvim_get_current_buf()) end

---@return string
function M:get_debug_name() return M.NAME end

-- The items' columns are bytes (lsp_items), not UTF-16 units.
---@return string
function M:get_position_encoding_kind() return "utf-8" end

---@param params { context: { cursor: { row: integer }, cursor_before_line: string } }
---@param callback fun(result: table)
function M:complete(params, callback)
  local row, col = params.context.cursor.row - 1, #params.context.cursor_before_line
  local kind = require("cmp").lsp.CompletionItemKind.Text
  completion.fetch(function(items)
    callback({ items = completion.lsp_items(items, row, col, kind), isIncomplete = false })
  end)
end

-- Register the source with nvim-cmp (once).
---@return nil
function M.register()
  if not M.registered then
    M.registered = require("cmp").register_source(M.NAME, M.new())
  end
end

return M
