-- require("codecompanion.schema") for extensions: get_default(adapter, opts), the settings an
-- adapter's schema gives by default (a function default called with the adapter), `opts` over them.
return require("codecompanion_py.alias").load({ "lua/codecompanion/schema.lua" }, function()
  local M = {}
  ---@param adapter table
  ---@param opts? table
  ---@return table
  function M.get_default(adapter, opts)
    local settings = {}
    for key, entry in pairs(type(adapter) == "table" and adapter.schema or {}) do
      local value = type(entry) == "table" and entry.default or nil
      if type(value) == "function" then
        local ok, result = pcall(value, adapter)
        value = ok and result or nil
      end
      settings[key] = value
    end
    return vim.tbl_extend("force", settings, opts or {})
  end
  return M
end)
