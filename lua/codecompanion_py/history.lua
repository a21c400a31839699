-- :CodeCompanionHistory: the saved chats, newest first (title, adapter, age), through
-- vim.ui.select; the one picked opens as a chat that carries on where it stopped (the engine
-- keeps its whole history; ga switches the adapter as in any chat). Chats are saved by the
-- engine after each turn (codecompanion_py/chat/history.py), under stdpath("data").
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

function M.label(entry)
  return ("%s  (%s, %s)"):format(entry.title, entry.adapter, age(entry.updated))
end

-- Reopen a saved chat by its id.
function M.open(id)
  local ok, saved = pcall(rpc.request, "history.load", { id = id, dir = rpc.history_dir() })
  if not ok then
    return vim.notify("CodeCompanion: " .. tostring(saved), vim.log.levels.ERROR)
  end
  return require("codecompanion_py.chat").open({ adapter = saved.adapter, model = saved.model, saved = saved })
end

function M.pick()
  local ok, entries = pcall(rpc.request, "history.list", { dir = rpc.history_dir() })
  if not ok then
    return vim.notify("CodeCompanion: " .. tostring(entries), vim.log.levels.ERROR)
  end
  if #entries == 0 then
    return vim.notify("CodeCompanion: no saved chats yet")
  end
  vim.ui.select(entries, { prompt = "Saved chats", format_item = M.label }, function(entry)
    if entry then
      M.open(entry.id)
    end
  end)
end

return M
