-- What the chat reads of the user's config, and the turns' headers it makes from it.
local M = {}

---@return table config the plugin's whole config
function M.all()
  return require("codecompanion_py").config
end

---@return table display `display.chat`
function M.display()
  return M.all().display.chat or {}
end

-- `interactions.chat.<key>` (or the older `strategies.chat.<key>`).
---@param key string
---@return any
function M.get(key)
  return require("codecompanion_py").chat_option(key)
end

---@return table opts `interactions.chat.opts`
function M.opts()
  return M.get("opts") or {}
end

-- The headers of the turns, from `interactions.chat.roles` (CodeCompanion's defaults:
-- "Me" and "CodeCompanion (<adapter>)"; `llm` may be a function of the adapter).
---@return string
function M.user_header()
  local roles = M.get("roles") or {}
  return "## " .. (type(roles.user) == "string" and roles.user or "Me")
end

---@param adapter { name?: string, formatted_name?: string }
---@return string
function M.llm_header(adapter)
  local name = (M.get("roles") or {}).llm
  if type(name) == "function" then
    local ok, result = pcall(name, adapter)
    name = ok and result or nil
  end
  if type(name) ~= "string" then
    name = ("CodeCompanion (%s)"):format(adapter.formatted_name or adapter.name)
  end
  return "## " .. name
end

-- `User CodeCompanion<event>` autocmds.
---@param event string without the "CodeCompanion" prefix
---@param data? table
function M.fire(event, data)
  vim.api.nvim_exec_autocmds("User", { pattern = "CodeCompanion" .. event, modeline = false, data = data })
end

-- Run the chat's callbacks for `event` (CodeCompanion's on_created, on_before_submit, ...):
-- those of `interactions.chat.callbacks` and those added with chat:add_callback().
---@param chat CodeCompanionChat
---@param event string
---@param info? table
---@return boolean go_on false when one of them returned false
function M.run_callbacks(chat, event, info)
  local go_on = true
  for _, fn in ipairs(chat.callbacks and chat.callbacks[event] or {}) do
    local ok, result = pcall(fn, chat, info)
    if not ok then
      vim.notify(("CodeCompanion: callback %s failed: %s"):format(event, result), vim.log.levels.ERROR)
    elseif result == false then
      go_on = false
    end
  end
  return go_on
end

return M
