-- blink.cmp's source for edit predictions: in blink's config,
--   sources.providers.codecompanion_completion =
--     { name = "CodeCompanion", module = "codecompanion_py.completion.blink" }
-- luacheck: no self (blink calls these as methods; they need no state)
local completion = require("codecompanion_py.completion")

local M = {}

---@return table
function M.new()
  return setmetatable({}, { __index = M })
end

---@return boolean
function M:enabled() return completion.wanted(vim.api.nvim_get_current_buf()) end

---@param ctx { cursor: integer[] }
---@param callback fun(result: table)
---@return fun() cancel
function M:get_completions(ctx, callback)
  local row, col = ctx.cursor[1] - 1, ctx.cursor[2]
  local kind = require("blink.cmp.types").CompletionItemKind.Text
  local id = completion.fetch(function(items)
    callback({ items = completion.lsp_items(items, row, col, kind), is_incomplete_forward = false,
      is_incomplete_backward = false })
  end)
  return function() completion.cancel(id) end
end

return M
