-- :checkhealth codecompanion_py: what only the editor knows (CodeCompanion.nvim beside us, options that do
-- nothing, the engine's process), then the engine's report, which it sends ready to show (checkhealth.py).
---@class codecompanion_py.HealthSection
---@field title string
---@field entries { level: "ok"|"warn"|"error"|"info", text: string, advice?: string[] }[]
local M = {}

local function add(list, level, text, advice) table.insert(list, { level = level, text = text, advice = advice }) end

-- A CodeCompanion.nvim config in use here: is CodeCompanion installed too, which of its options do nothing.
---@return codecompanion_py.HealthSection
local function compatibility()
  local entries = {}
  local original = require("codecompanion_py.alias").original("lua/codecompanion/init.lua")
  if not original then
    add(entries, "ok", 'require("codecompanion") loads this plugin')
  else
    add(entries, "warn", ('CodeCompanion.nvim is installed too (%s): require("codecompanion") loads it, '
      .. "not this plugin"):format(vim.fn.fnamemodify(original, ":h:h:h")),
      { 'Remove one of the two, or call require("codecompanion_py").setup() for this plugin' })
  end
  local unsupported = require("codecompanion_py.config_check").unsupported(require("codecompanion_py").user_opts)
  if #unsupported == 0 then add(entries, "ok", "every option in setup() is honoured") end
  for _, item in ipairs(unsupported) do
    add(entries, "warn", ("%s has no effect here: %s"):format(item.key, item.why))
  end
  for _, line in ipairs(require("codecompanion_py.extensions").failed) do
    add(entries, "error", line)
  end
  return { title = "codecompanion_py: coming from CodeCompanion.nvim", entries = entries }
end

-- The engine's process as the editor sees it, added to `host`; the engine's other sections when it answers.
---@return codecompanion_py.HealthSection[]|nil
local function engine(rpc, host)
  if vim.g.codecompanion_py_build == "running" then
    return add(host, "warn", "the engine is being installed (build.lua); run :checkhealth again when it is done")
  end
  if rpc.last_exit() then add(host, "warn", "earlier in this session " .. rpc.last_exit()) end
  local running = rpc.host()
  if running then
    add(host, "ok", ("the engine runs as Neovim's job (pid %s) with %s"):format(running.pid, running.python))
  elseif rpc.running() then -- no job of ours: the remote plugin answers
    add(host, "ok", "the engine is served by the remote plugin registered with :UpdateRemotePlugins")
  else
    local python, chosen = rpc.python()
    if vim.fn.executable(python) ~= 1 and chosen then
      return add(host, "error", ("opts.python = %s is not executable"):format(python),
        { "Point opts.python at a Python that has codecompanion-py installed, or remove it" })
    elseif vim.fn.executable(python) ~= 1 then
      return add(host, "error", ("the engine is not installed: no %s"):format(python), { rpc.install_hint() })
    end
    add(host, "ok", ("the engine's Python: %s (%s)"):format(python, chosen and "opts.python" or "the plugin's venv"))
  end
  local predicting = require("codecompanion_py.completion").status().enabled -- as the command left it
  local ok, sections = pcall(rpc.request, "health", { completion = predicting })
  if not ok then
    return add(host, "error", "the Python engine did not answer: " .. tostring(sections), { rpc.install_hint() })
  end
  vim.list_extend(host, table.remove(sections, 1).entries) -- the engine's own lines on its Python
  return sections
end

---Shows every check through vim.health.
function M.check()
  local host = { title = "codecompanion_py: Python host", entries = {} }
  local sections = { compatibility(), host }
  for _, section in ipairs(vim.list_extend(sections, engine(require("codecompanion_py.rpc"), host.entries) or {})) do
    vim.health.start(section.title)
    for _, entry in ipairs(section.entries) do vim.health[entry.level](entry.text, entry.advice) end
  end
end

return M
