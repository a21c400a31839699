-- CodeCompanion's chat object, for keymap callbacks, callbacks and
-- require("codecompanion").buf_get_chat(): one per chat buffer, and the chat's state too.
local buffer = require("codecompanion_py.chat.buffer")
local shared = require("codecompanion_py.chat.shared")

local function chat_module()
  return require("codecompanion_py.chat")
end

---@class CodeCompanionChat
---@field bufnr integer the chat's buffer, and its id with the engine
---@field id integer the same as bufnr
---@field status "idle"|"streaming"
---@field adapter CodeCompanionAdapterInfo what the engine said it uses (a name alone until then)
---@field context table the buffer the chat was opened from
---@field callbacks table<string, function[]> by event (on_created, on_before_submit, ...)
---@field open_payload table what `chat.open` sends the engine (again after a restart)
---@field ui { open: fun(), hide: fun(), is_visible: fun(): boolean }
---@field engine_ready? boolean the engine said Ready
---@field opened? boolean `chat.open` went in this command
---@field turn_started? boolean
---@field end_pos? integer[] the end of the buffer while a reply streams: { row, col }
---@field block? "text"|"reasoning"|"block" what the reply wrote last
---@field blocks? table<string, { mark: integer, count: integer }> blocks rewritten in place
---@field shared? table[] context items sent (chat/shared.lua)
---@field commands? table[] the agent's slash commands
---@field follow_up? string what `gm` queued while the reply streams
local Chat = {}
Chat.__index = Chat

---@param event string
---@param fn fun(chat: CodeCompanionChat, info?: table): boolean?
function Chat:add_callback(event, fn)
  self.callbacks[event] = self.callbacks[event] or {}
  table.insert(self.callbacks[event], fn)
  if event == "on_tool_output" then -- the engine asks for these (a round trip each tool output): told
    self.open_payload.hooks = { "on_tool_output" } -- with the chat's open and with each message
  end
end

function Chat:submit()
  chat_module().submit(self.bufnr)
end

function Chat:restore()
  chat_module().restore(self.bufnr)
end

function Chat:close()
  chat_module().close(self.bufnr)
end

-- True, and the user told `why` (or that adding waits), while a reply streams.
---@param chat CodeCompanionChat
---@param why? string
---@return boolean|nil
local function busy(chat, why)
  if chat.status == "streaming" then
    vim.notify("CodeCompanion: " .. (why or "wait for the reply (or press q) before adding to the chat"),
      vim.log.levels.WARN)
    return true
  end
end

-- chat:add_buf_message({ role = "user", content = "..." }): text for the next message.
---@param message string|{ role?: string, content: string }
function Chat:add_buf_message(message)
  if not busy(self) then
    buffer.add_to_message(self, type(message) == "table" and tostring(message.content or "") or tostring(message))
  end
end

-- chat:add_context({ role = "user", content = "..." }, source, id): context for the next
-- message, listed in the chat's context block as `id` (CodeCompanion's, for slash commands
-- of the user's own).
---@param message string|{ content: string }
---@param source? string
---@param id? string
function Chat:add_context(message, source, id)
  local content = type(message) == "table" and message.content or message
  if type(content) ~= "string" or content == "" then
    return vim.notify("CodeCompanion: add_context needs { content = <text> }", vim.log.levels.WARN)
  end
  source = type(source) == "string" and source or "context"
  id = type(id) == "string" and id ~= "" and id or ("<" .. source .. ">" .. source .. "</" .. source .. ">")
  if not id:match("^<(%w+)>.-</%1>$") then -- the block lists ids of this form
    local tag = (source:gsub("%W", ""))
    id = ("<%s>%s</%s>"):format(tag, (id:gsub("[<>]", "")), tag)
  end
  shared.add_pending(self, { { id = id, kind = source, label = source, content = content } })
  if vim.bo[self.bufnr].modifiable then
    buffer.show_context(self)
  end
end

local M = { busy = busy }

---@param fields table the chat's first state
---@return CodeCompanionChat
function M.new(fields)
  local chat = setmetatable(fields, Chat)
  local window = require("codecompanion_py.chat.window")
  chat.ui = {
    open = function() chat_module().show_chat(chat) end,
    hide = function() chat_module().hide(chat) end,
    is_visible = function() return window.visible(chat.bufnr) end,
  }
  return chat
end

return M
