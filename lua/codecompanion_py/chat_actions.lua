-- Chat actions that go through the engine: regenerate (gr), clear (gx), the debug view
-- (gd), the system prompt toggle (gs) and the settings header (display.chat.show_settings).
-- chat.lua wires the keymaps to these functions and renders the ops in `M.render`.
-- (Being built: each function says so until it works.)
local M = {}

---@type table<string, fun(chat: table, op: table)> renderers of the ops these actions use
M.render = {}

local function pending(what)
  return function()
    vim.notify("CodeCompanion: " .. what .. " is not available yet", vim.log.levels.WARN)
  end
end

M.regenerate = pending("regenerate (gr)") ---@type fun(buf: integer)
M.clear = pending("clear (gx)") ---@type fun(buf: integer)
M.debug = pending("the debug view (gd)") ---@type fun(buf: integer)
M.toggle_system_prompt = pending("the system prompt toggle (gs)") ---@type fun(buf: integer)

-- The settings the user edited in the chat's header, or nil (sent with each submit).
---@param buf integer
---@return table|nil
function M.read_settings(buf) -- luacheck: no unused args
  return nil
end

return M
