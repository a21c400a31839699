-- `require("codecompanion.adapters.acp.helpers")`, which CodeCompanion's docs use in an ACP
-- adapter's `form_messages` handler (see codecompanion_py/alias.lua). Here the engine forms
-- each prompt itself, so such handlers are not called; this keeps a pasted agent loading.
return require("codecompanion_py.alias").load({ "lua/codecompanion/adapters/acp/helpers.lua" }, function()
  local M = {}
  -- The chat's messages as ACP text content blocks.
  ---@param messages? { content?: string }[]
  ---@return { type: "text", text: string }[]
  function M.form_messages(_, messages)
    local blocks = {}
    for _, message in ipairs(messages or {}) do
      if type(message.content) == "string" and message.content ~= "" then
        table.insert(blocks, { type = "text", text = message.content })
      end
    end
    return blocks
  end
  return M
end)
