-- User commands only; everything else loads on first use.
if vim.g.loaded_codecompanion_py then
  return
end
vim.g.loaded_codecompanion_py = true

vim.api.nvim_create_user_command("CodeCompanionChat", function(cmd)
  require("codecompanion_py.chat").command(cmd.fargs, cmd)
end, {
  nargs = "*",
  range = true,
  desc = "Open a CodeCompanion chat: [Toggle|Add|Changes|RefreshCache] [adapter=|model=|command=NAME] [prompt]",
  complete = function(arg, line)
    if arg:match("^adapter=") then
      local ok, names = pcall(require("codecompanion_py.rpc").request, "adapters")
      if ok then
        return vim.tbl_map(function(n) return "adapter=" .. n end, names)
      end
    end
    local first = not line:match("CodeCompanionChat%s+%S+%s")
    local items = { "adapter=", "model=", "command=" }
    vim.list_extend(items, first and { "Toggle", "Add", "Changes", "RefreshCache" } or {})
    return vim.tbl_filter(function(item) return item:lower():find(arg:lower(), 1, true) == 1 end, items)
  end,
})

-- What a command over a range passes on.
local function ranged(cmd)
  return { args = cmd.args, range = cmd.range, line1 = cmd.line1, line2 = cmd.line2 }
end

vim.api.nvim_create_user_command("CodeCompanion", function(cmd)
  require("codecompanion_py.inline").run(ranged(cmd))
end, {
  nargs = "*",
  range = true,
  desc = "Inline assistant: [adapter=NAME] [model=NAME] [placement=replace|add|before|new|chat] <prompt>",
})

vim.api.nvim_create_user_command("CodeCompanionCmd", function(cmd)
  require("codecompanion_py.inline").cmd(cmd.args)
end, { nargs = "*", desc = "Ask for an Ex command: it is put on the command line, never run by itself" })

vim.api.nvim_create_user_command("CodeCompanionActions", function(cmd)
  require("codecompanion_py.palette").open(ranged(cmd))
end, {
  nargs = "?",
  range = true,
  desc = "The action palette: chats, the prompt library, workflows; `Refresh` re-reads prompt files",
  complete = function() return { "Refresh" } end,
})

vim.api.nvim_create_user_command("CodeCompanionHistory", function(cmd)
  require("codecompanion_py.history").pick(cmd.fargs[1])
end, {
  nargs = "?",
  desc = "Reopen a saved chat (newest first) and carry on; `rename` or `delete` one",
  complete = function(arg)
    return vim.tbl_filter(function(item) return item:find(arg, 1, true) == 1 end, { "rename", "delete" })
  end,
})

vim.api.nvim_create_user_command("CodeCompanionLog", function()
  vim.cmd.split(vim.fn.fnameescape(require("codecompanion_py.rpc").log_file()))
end, { desc = "Open the log in a split (opts.log_level says how much goes in it)" })

vim.api.nvim_create_user_command("CodeCompanionInstall", function()
  require("codecompanion_py.rpc").install()
end, { desc = "Install the Python engine into the plugin's .venv (runs build.lua, in the background)" })

vim.api.nvim_create_user_command("CodeCompanionCodeReview", function(cmd)
  require("codecompanion_py.code_review").run(vim.tbl_extend("force", ranged(cmd), { subcommand = cmd.fargs[1] }))
end, {
  nargs = "?",
  range = true,
  desc = "Review the agent's changes, one quickfix entry per hunk: "
    .. "[Accept|All|Approve|Comment|Comments|Ignore|Share|Start]",
  complete = function(arg)
    local names = { "Accept", "All", "Approve", "Comment", "Comments", "Ignore", "Share", "Start" }
    return vim.tbl_filter(function(item) return item:lower():find(arg:lower(), 1, true) == 1 end, names)
  end,
})

vim.api.nvim_create_user_command("CodeCompanionCLI", function(cmd)
  require("codecompanion_py.cli").command(cmd)
end, {
  nargs = "*",
  bang = true,
  range = true,
  desc = "A CLI agent in a terminal: [agent=NAME] [Ask|prompt]; ! submits the prompt",
  complete = function(arg)
    local agents = vim.tbl_keys(require("codecompanion_py.options").get("interactions.cli.agents") or {})
    local items = vim.list_extend({ "Ask" }, vim.tbl_map(function(name) return "agent=" .. name end, agents))
    return vim.tbl_filter(function(item) return item:find(arg, 1, true) == 1 end, items)
  end,
})

vim.api.nvim_create_user_command("CodeCompanionCompletion", function(cmd)
  require("codecompanion_py.completion").command(cmd.args)
end, {
  nargs = 1,
  desc = "Edit predictions while typing: enable|disable|toggle",
  complete = function() return { "enable", "disable", "toggle" } end,
})
