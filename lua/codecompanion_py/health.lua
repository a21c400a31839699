-- :checkhealth codecompanion_py
local M = {}

local function sorted_keys(tbl)
  local keys = vim.tbl_keys(tbl)
  table.sort(keys)
  return keys
end

-- One agent: its command (for agents run through our bridge, the CLI the bridge drives),
-- where it was found and the version it reports.
local function agent_line(h, name, agent)
  local command = ("`%s`"):format(agent.command)
  if agent.bridge then
    command = command .. (" (through `codecompanion-py acp-bridge %s`)"):format(agent.bridge)
  end
  if not agent.found then
    local hint = agent.install ~= "" and (" (%s)"):format(agent.install) or ""
    h.info(("%s: %s not on PATH%s"):format(name, command, hint))
  elseif agent.version then
    h.ok(("%s: %s %s (%s)"):format(name, command, agent.version, agent.path or agent.command))
  elseif agent.version_error and agent.version_error:match("^cannot run") then
    h.warn(("%s: %s is on PATH but %s"):format(name, command, agent.version_error))
  elseif agent.version_error then
    h.ok(("%s: %s found (%s); version unknown: %s"):format(name, command, agent.path or "", agent.version_error))
  else
    h.ok(("%s: %s found"):format(name, command))
  end
end

-- A CodeCompanion.nvim config in use here: is CodeCompanion installed too, which of its options do nothing.
local function compatibility(h)
  h.start("codecompanion_py: coming from CodeCompanion.nvim")
  local original = require("codecompanion_py.alias").original("lua/codecompanion/init.lua")
  if original then
    h.warn(("CodeCompanion.nvim is installed too (%s): require(\"codecompanion\") loads it, not this plugin")
      :format(vim.fn.fnamemodify(original, ":h:h:h")),
      { "Remove one of the two, or call require(\"codecompanion_py\").setup() for this plugin" })
  else
    h.ok('require("codecompanion") loads this plugin')
  end
  local unsupported = require("codecompanion_py.config_check").unsupported(require("codecompanion_py").user_opts)
  if #unsupported == 0 then
    h.ok("every option in setup() is honoured")
  end
  for _, item in ipairs(unsupported) do
    h.warn(("%s has no effect here: %s"):format(item.key, item.why))
  end
end

-- :checkhealth codecompanion_py: the plugin's config, the engine's report, agents and MCP servers.
function M.check()
  local h = vim.health
  compatibility(h)
  h.start("codecompanion_py: Python host")
  local rpc = require("codecompanion_py.rpc")
  local running = rpc.host()
  local registered = vim.fn.exists("*CodeCompanionPyNotify") == 1
    or vim.fn.exists("#FuncUndefined#CodeCompanionPyNotify") == 1
  if vim.g.codecompanion_py_build == "running" then
    h.warn("the engine is being installed (build.lua); run :checkhealth again when it is done")
    return
  end
  if rpc.last_exit() then
    h.warn("earlier in this session " .. rpc.last_exit())
  end
  if running then
    h.ok(("the engine runs as Neovim's job (pid %s) with %s"):format(running.pid, running.python))
  elseif registered then
    h.ok("the engine is served by the remote plugin registered with :UpdateRemotePlugins")
  else
    local python, chosen = rpc.python()
    if vim.fn.executable(python) ~= 1 then
      if chosen then
        h.error(("opts.python = %s is not executable"):format(python),
          { "Point opts.python at a Python that has codecompanion-py installed, or remove it" })
      else
        h.error(("the engine is not installed: no %s"):format(python), { rpc.install_hint() })
      end
      return
    end
    h.ok(("the engine's Python: %s (%s)"):format(python, chosen and "opts.python" or "the plugin's venv"))
  end
  local ok, report = pcall(rpc.request, "health")
  if not ok then
    h.error("the Python engine did not answer: " .. tostring(report), { rpc.install_hint() })
    return
  end
  h.ok(("Python %s (%s)"):format(report.python, report.executable))
  for _, pkg in ipairs(sorted_keys(report.versions)) do
    local version = report.versions[pkg]
    if version == vim.NIL or version == nil then
      h.error(pkg .. " is not installed")
    else
      h.ok(pkg .. " " .. version)
    end
  end
  h.start("codecompanion_py: adapters")
  h.info("available: " .. table.concat(report.adapters, ", "))
  local errors = report.adapter_errors or {}
  for _, name in ipairs(sorted_keys(errors)) do
    h.error(("adapter %s: %s"):format(name, errors[name]))
  end
  h.start("codecompanion_py: coding agents (ACP)")
  local agents = report.agents or {}
  for _, name in ipairs(sorted_keys(agents)) do
    agent_line(h, name, agents[name])
  end
  local servers = require("codecompanion_py.mcp").status()
  if #servers > 0 then
    h.start("codecompanion_py: MCP servers")
    for _, server in ipairs(servers) do
      local line = ("%s (%s): %s"):format(server.name, server.transport,
        server.running and ("running, %d tools, %d prompts, %d resources"):format(#server.tools, #server.prompts,
          #server.resources) or "not started (servers start when a chat first needs them)")
      if type(server.last_exit) == "string" then
        h.warn(line .. "; it last stopped: " .. server.last_exit)
      else
        h.ok(line)
      end
    end
  end
  h.start("codecompanion_py: environment variables (values are never shown)")
  for _, key in ipairs(sorted_keys(report.keys or {})) do
    if report.keys[key] == true then
      h.ok(key .. ": set")
    else
      h.info(key .. ": not set")
    end
  end
end

return M
