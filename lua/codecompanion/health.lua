-- :checkhealth codecompanion, for those coming from CodeCompanion.nvim (see codecompanion_py/alias.lua).
return require("codecompanion_py.alias").load({ "lua/codecompanion/health.lua" }, function()
  return require("codecompanion_py.health")
end)
