-- require("codecompanion") for configs written for CodeCompanion.nvim (see codecompanion_py/alias.lua).
return require("codecompanion_py.alias").load({ "lua/codecompanion/init.lua" }, function()
  return require("codecompanion_py.api")
end)
