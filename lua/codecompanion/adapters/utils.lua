-- `require("codecompanion.adapters.utils")`, for handlers written for CodeCompanion
-- (see require("codecompanion_py.adapters").utils and codecompanion_py/alias.lua).
return require("codecompanion_py.alias").load({ "lua/codecompanion/adapters/utils.lua" }, function()
  return require("codecompanion_py.adapters").utils
end)
