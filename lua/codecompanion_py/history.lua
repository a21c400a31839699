-- :CodeCompanionHistory: the saved chats, newest first (title, adapter, age), through
-- vim.ui.select; the one picked opens as a chat that carries on where it stopped (the engine
-- keeps its whole history; ga switches the adapter as in any chat).
-- :CodeCompanionHistory rename / delete: pick one, then give it a title / confirm.
-- Chats are saved by the engine after each turn (codecompanion_py/chat/history.py), under
-- stdpath("data").
local rpc = require("codecompanion_py.rpc")

local M = {}

local function age(seconds)
  local ago = os.time() - math.floor(seconds or 0)
  if ago < 90 then
    return "just now"
  elseif ago < 5400 then
    return ("%d min ago"):format(math.floor(ago / 60 + 0.5))
  elseif ago < 129600 then
    return ("%d h ago"):format(math.floor(ago / 3600 + 0.5))
  end
  return ("%d days ago"):format(math.floor(ago / 86400 + 0.5))
end

---@param entry table a saved chat's entry
---@return string
function M.label(entry)
  return ("%s  (%s, %s)"):format(entry.title, entry.adapter, age(entry.updated))
end

local function request(method, payload)
  payload.dir = rpc.history_dir()
  local ok, result = pcall(rpc.request, method, payload)
  if not ok then
    vim.notify("CodeCompanion: " .. tostring(result), vim.log.levels.ERROR)
    return nil
  end
  return result
end

-- Reopen a saved chat by its id; one open already (it writes to that saved chat) is shown instead.
---@param id string
---@return CodeCompanionChat|nil
function M.open(id)
  local chats = require("codecompanion_py.chat")
  for _, chat in pairs(chats.chats) do
    if chat.open_payload.history_id == id or chat.open_payload.resume_id == id then
      chats.show_chat(chat)
      return chat
    end
  end
  local saved = request("history.load", { id = id })
  return saved and chats.open({ adapter = saved.adapter, model = saved.model, saved = saved })
end

---@param entry table
function M.rename(entry)
  vim.ui.input({ prompt = "Title: ", default = entry.title }, function(title)
    if title and vim.trim(title) ~= "" and request("history.rename", { id = entry.id, title = title }) then
      vim.notify(("CodeCompanion: renamed to %q"):format(vim.trim(title)))
    end
  end)
end

---@param entry table
function M.delete(entry)
  local question = { prompt = ("Delete %q?"):format(entry.title), format_item = tostring }
  vim.ui.select({ "Delete", "Keep" }, question, function(choice)
    if choice == "Delete" and request("history.delete", { id = entry.id }) then
      vim.notify(("CodeCompanion: deleted %q"):format(entry.title))
    end
  end)
end

local ACTIONS = { open = function(entry) M.open(entry.id) end, rename = M.rename, delete = M.delete }

-- `action`: nil (open), "rename" or "delete".
---@param action? "rename"|"delete"
function M.pick(action)
  local act = ACTIONS[action or "open"]
  if not act then
    return vim.notify("CodeCompanion: :CodeCompanionHistory takes rename or delete, not " .. action,
      vim.log.levels.ERROR)
  end
  local entries = request("history.list", {})
  if not entries then
    return
  end
  if #entries == 0 then
    return vim.notify("CodeCompanion: no saved chats yet")
  end
  local prompt = action and ("Saved chat to " .. action) or "Saved chats"
  vim.ui.select(entries, { prompt = prompt, format_item = M.label }, function(entry)
    if entry then
      act(entry)
    end
  end)
end

return M
