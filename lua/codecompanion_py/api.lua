-- The functions of CodeCompanion.nvim's `require("codecompanion")` that a config or a keymap
-- calls, over this plugin (lua/codecompanion/init.lua returns this module).
local M = {}

function M.setup(opts)
  require("codecompanion_py").setup(opts)
end

return M
