-- User commands only; everything else loads on first use.
if vim.g.loaded_codecompanion_py then
  return
end
vim.g.loaded_codecompanion_py = true

vim.api.nvim_create_user_command("CodeCompanionChat", function(cmd)
  require("codecompanion_py.chat").command(cmd.fargs)
end, {
  nargs = "*",
  desc = "Open a CodeCompanion chat: [adapter=NAME] [model=NAME] [prompt]",
  complete = function(arg)
    if arg:match("^adapter=") then
      local ok, names = pcall(require("codecompanion_py.rpc").request, "adapters")
      if ok then
        return vim.tbl_map(function(n) return "adapter=" .. n end, names)
      end
    end
    return { "adapter=", "model=" }
  end,
})

vim.api.nvim_create_user_command("CodeCompanionInstall", function()
  require("codecompanion_py.rpc").install()
end, { desc = "Install the Python engine into the plugin's .venv (runs build.lua, in the background)" })
