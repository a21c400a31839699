-- The only caller of the Python entry points.
--   notify(method, payload): fire and forget (chat.open, chat.submit, chat.stop, ...)
--   request(method, payload): waits for an answer (health)
local M = {}

local config_sent = false

function M.config_changed()
  config_sent = false
end

-- Functions cannot cross the RPC: adapter factories are called here, Lua-defined tools
-- stay in tools.lua (the engine gets their description), and any other function left in
-- the table is dropped with a warning naming where it was.
local function to_data(value, path, dropped)
  local tool = path:match("^%a+%.chat%.tools%.([^.]+)$")
  if tool and tool ~= "opts" and tool ~= "groups" and type(value) == "table" then
    value = require("codecompanion_py.tools").register(tool, value)
  end
  if type(value) == "function" then
    if path:match("^adapters%.http%.[^.]+$") or path:match("^adapters%.acp%.[^.]+$") then
      local ok, result = pcall(value)
      if not ok then
        vim.notify(("CodeCompanion: %s failed: %s"):format(path, result), vim.log.levels.ERROR)
        return nil
      end
      return to_data(result, path, dropped)
    end
    table.insert(dropped, path)
    return nil
  end
  if type(value) ~= "table" then
    return value
  end
  local out = {}
  for k, v in pairs(value) do
    out[k] = to_data(v, path == "" and tostring(k) or (path .. "." .. tostring(k)), dropped)
  end
  return out
end

function M.payload_for_config()
  local dropped = {}
  local data = to_data(require("codecompanion_py").config, "", dropped)
  if #dropped > 0 then
    vim.notify("CodeCompanion: functions are not supported here yet and were ignored: "
      .. table.concat(dropped, ", "), vim.log.levels.WARN)
  end
  return data
end

-- Agents are processes of the engine's: they must not outlive Neovim.
local exit_hook = false
local function kill_agents_on_exit()
  if exit_hook then
    return
  end
  exit_hook = true
  vim.api.nvim_create_autocmd("VimLeavePre", {
    callback = function()
      pcall(vim.fn.CodeCompanionPyRequest, "kill_agents", vim.empty_dict())
    end,
  })
end

local function ensure_config()
  kill_agents_on_exit()
  if not config_sent then
    config_sent = true
    vim.fn.CodeCompanionPyNotify("config.set", M.payload_for_config())
  end
end

-- Returns false, after telling the user, when the Python engine cannot be reached.
function M.notify(method, payload)
  local ok, err = pcall(function()
    ensure_config()
    vim.fn.CodeCompanionPyNotify(method, payload or vim.empty_dict())
  end)
  if not ok then
    config_sent = false
    vim.notify("CodeCompanion: the Python engine is not available (" .. tostring(err)
      .. "). Run :checkhealth codecompanion_py", vim.log.levels.ERROR)
  end
  return ok
end

-- For answers to the engine: no config check, errors raised to the caller.
function M.notify_raw(method, payload)
  vim.fn.CodeCompanionPyNotify(method, payload)
end

function M.request(method, payload)
  ensure_config()
  return vim.fn.CodeCompanionPyRequest(method, payload or vim.empty_dict())
end

return M
