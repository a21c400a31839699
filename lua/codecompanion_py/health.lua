-- :checkhealth codecompanion_py
local M = {}

function M.check()
  local h = vim.health
  h.start("codecompanion_py: Python host")
  local prog = vim.g.python3_host_prog
  if prog and prog ~= "" then
    if vim.fn.executable(vim.fn.expand(prog)) == 1 then
      h.ok("g:python3_host_prog = " .. prog)
    else
      h.error("g:python3_host_prog is not executable: " .. prog)
    end
  else
    h.warn("g:python3_host_prog is not set; Neovim will use the first python3 on PATH",
      { "Point it at the virtual environment that has codecompanion-py installed" })
  end
  -- Remote-plugin functions are defined on first call (FuncUndefined), so just call it.
  local ok, report = pcall(require("codecompanion_py.rpc").request, "health")
  if not ok then
    if tostring(report):match("Unknown function") then
      h.error("the remote plugin is not registered", { "Run :UpdateRemotePlugins and restart Neovim" })
    else
      h.error("the Python engine did not answer: " .. tostring(report),
        { "Check that g:python3_host_prog has codecompanion-py and pynvim installed" })
    end
    return
  end
  h.ok(("Python %s (%s)"):format(report.python, report.executable))
  for pkg, version in pairs(report.versions) do
    if version == vim.NIL or version == nil then
      h.error(pkg .. " is not installed")
    else
      h.ok(pkg .. " " .. version)
    end
  end
  h.start("codecompanion_py: adapters")
  h.info("available: " .. table.concat(report.adapters, ", "))
  for name, err in pairs(report.adapter_errors or {}) do
    h.error(("adapter %s: %s"):format(name, err))
  end
  h.start("codecompanion_py: coding agents (ACP)")
  local names = vim.tbl_keys(report.agents or {})
  table.sort(names)
  for _, name in ipairs(names) do
    local agent = report.agents[name]
    if agent.found then
      h.ok(("%s: `%s` found"):format(name, agent.command))
    else
      h.info(("%s: `%s` not on PATH (%s)"):format(name, agent.command, agent.install))
    end
  end
  h.start("codecompanion_py: API keys (values are never shown)")
  for key, present in pairs(report.keys) do
    if present then
      h.ok(key .. " is set")
    else
      h.info(key .. " is not set")
    end
  end
end

return M
