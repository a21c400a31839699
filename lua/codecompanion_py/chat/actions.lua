-- What the chat's keymaps do (the callbacks named "keymaps.<name>"), and the actions that
-- go through the engine: regenerate (gr), clear (gx), the debug view (gd), the system
-- prompt toggle (gs). The engine checks each and answers with ops (chat/render.lua) or an
-- error that says why not.
local api = vim.api
local rpc = require("codecompanion_py.rpc")
local config = require("codecompanion_py.chat.config")
local editing = require("codecompanion_py.chat.editing")
local buffer = require("codecompanion_py.chat.buffer")
local shared = require("codecompanion_py.chat.shared")

local M = {}

local function chat_module()
  return require("codecompanion_py.chat")
end

-- Ask the engine for `method` when the chat of `buf` is open and idle; otherwise say why not.
local function when_idle(method, what)
  ---@param buf integer
  return function(buf)
    local chat = chat_module().chats[buf]
    if not chat then
      vim.notify("CodeCompanion: this buffer is not a chat", vim.log.levels.WARN)
    elseif chat.status == "streaming" then
      vim.notify(("CodeCompanion: wait for the reply to finish (or press q) to %s"):format(what), vim.log.levels.WARN)
    else
      rpc.notify(method, { chat_id = buf })
    end
  end
end

M.toggle_system_prompt = when_idle("chat.system_prompt", "toggle the system prompt")
M.clear = when_idle("chat.clear", "clear the chat")
M.regenerate = when_idle("chat.regenerate", "regenerate")

---@param buf integer
function M.debug(buf)
  if chat_module().chats[buf] then
    rpc.notify("chat.debug", { chat_id = buf })
  end
end

-- `{` / `}`: the previous or next chat or CLI terminal in this window.
local function cycle(chat, step)
  require("codecompanion_py.cli").cycle(chat.bufnr, step)
end

-- An action that sends `method` to the engine for the chat (keymaps, slash commands).
---@param method string
---@return fun(chat: CodeCompanionChat)
function M.engine(method)
  return function(chat) rpc.notify(method, { chat_id = chat.bufnr }) end
end
local engine = M.engine

---@type table<string, fun(chat: CodeCompanionChat)> by the name after "keymaps."
M.keymaps = {
  options = function(chat) require("codecompanion_py.chat.keymaps").show(chat.adapter.type or "http") end,
  completion = function()
    api.nvim_feedkeys(api.nvim_replace_termcodes("<C-x><C-o>", true, false, true), "n", false)
  end,
  send = function(chat)
    vim.cmd("stopinsert")
    chat_module().submit(chat.bufnr)
  end,
  regenerate = function(chat) M.regenerate(chat.bufnr) end,
  close = function(chat)
    vim.cmd("stopinsert")
    chat_module().close(chat.bufnr)
  end,
  stop = function(chat) chat_module().stop(chat.bufnr) end,
  -- `gm`: a follow-up while the reply streams, sent with its next request or as the next message
  btw = function(chat)
    if chat.status ~= "streaming" then
      return vim.notify("CodeCompanion: gm sends a follow-up while a reply streams; now write it and send it")
    end
    vim.ui.input({ prompt = "btw ..." }, function(text)
      if text and text ~= "" and chat.status == "streaming" then
        chat.follow_up = text
        rpc.notify("chat.follow_up", { chat_id = chat.bufnr, text = text })
      elseif text and text ~= "" then -- the reply ended while it was typed
        buffer.add_to_message(chat, text)
        chat_module().submit(chat.bufnr)
      end
    end)
  end,
  clear = function(chat) M.clear(chat.bufnr) end,
  rewind = function(chat) require("codecompanion_py.chat.rewind").at_cursor(chat) end,
  codeblock = editing.codeblock,
  yank_code = function(chat) editing.yank_code(chat, config.opts().register or "+") end,
  next_chat = function(chat) cycle(chat, 1) end,
  previous_chat = function(chat) cycle(chat, -1) end,
  next_header = function(chat) editing.jump_header(chat, 1) end,
  previous_header = function(chat) editing.jump_header(chat, -1) end,
  change_adapter = function(chat) chat_module().change_adapter(chat.bufnr) end,
  fold_code = editing.fold_code,
  debug = function(chat) M.debug(chat.bufnr) end,
  toggle_system_prompt = function(chat) M.toggle_system_prompt(chat.bufnr) end,
  clear_approvals = engine("chat.clear_approvals"),
  yolo_mode = engine("chat.yolo"),
  goto_file_under_cursor = function() editing.goto_file(config.opts().goto_file_action) end,
  buffer_sync_all = function(chat) shared.toggle_sync(chat, "all") end,
  buffer_sync_diff = function(chat) shared.toggle_sync(chat, "diff") end,
  clear_rules = function(chat) chat_module().remove_context(chat, "rules") end,
  acp_options = engine("chat.agent_options"),
  acp_resume = engine("chat.sessions"),
  copilot_stats = engine("chat.copilot_stats"),
}

return M
