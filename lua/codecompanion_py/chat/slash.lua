-- Slash commands in the chat, as CodeCompanion's: type `/`, complete (<C-_> or <C-x><C-o>),
-- accept one, and it runs: the `/word` goes and what the command gives takes its place.
--   /buffer   pick an open buffer: `#{buffer:path}` (read when the message is sent)
--   /file     pick a project file: `#{file:path}`
--   /now      the date and time
--   /mode, /resume   (agent chats) the agent's options, an earlier session
-- Pickers are vim.ui.select, so a picker plugin that replaces it styles them.
local api = vim.api
local rpc = require("codecompanion_py.rpc")

local M = {}

local MAX_FILES = 5000
local SKIP = { [".git"] = true, node_modules = true, [".venv"] = true, __pycache__ = true }

-- The project's files, relative to the cwd: git's list when it is a repository, else a walk.
local function project_files()
  local ok, result = pcall(function()
    return vim.system({ "git", "ls-files", "--cached", "--others", "--exclude-standard" }, { text = true }):wait(3000)
  end)
  if ok and result.code == 0 and result.stdout ~= "" then
    return vim.list_slice(vim.split(vim.trim(result.stdout), "\n", { plain = true }), 1, MAX_FILES)
  end
  local files = {}
  for name, kind in vim.fs.dir(".", {
    depth = 8,
    skip = function(dir) return not SKIP[vim.fs.basename(dir)] end,
  }) do
    if kind == "file" then
      table.insert(files, name)
      if #files >= MAX_FILES then
        break
      end
    end
  end
  table.sort(files)
  return files
end

local function file_buffers()
  local out = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_get_name(buf)
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buflisted and vim.bo[buf].buftype == "" and name ~= ""
        and vim.bo[buf].filetype ~= "codecompanion" then
      table.insert(out, vim.fn.fnamemodify(name, ":."))
    end
  end
  return out
end

M.COMMANDS = {
  buffer = {
    description = "Share an open buffer",
    run = function(_, insert)
      vim.ui.select(file_buffers(), { prompt = "Buffer" }, function(path)
        if path then insert("#{buffer:" .. path .. "}") end
      end)
    end,
  },
  file = {
    description = "Share a file of the project",
    run = function(_, insert)
      vim.ui.select(project_files(), { prompt = "File" }, function(path)
        if path then insert("#{file:" .. path .. "}") end
      end)
    end,
  },
  now = {
    description = "Insert the date and time",
    run = function(_, insert) insert(os.date("%a, %d %b %Y %H:%M:%S %z")) end,
  },
  mode = {
    description = "Change the agent's mode, model or options",
    agent = true,
    run = function(chat) rpc.notify("chat.agent_options", { chat_id = chat.bufnr }) end,
  },
  resume = {
    description = "Resume an earlier session of the agent",
    agent = true,
    run = function(chat) rpc.notify("chat.sessions", { chat_id = chat.bufnr }) end,
  },
}

local function available(chat, command)
  return not command.agent or (chat.adapter and chat.adapter.type == "acp")
end

-- Completion items for `base` ("/fi"): each command with its description.
function M.items(chat, base)
  local names = vim.tbl_keys(M.COMMANDS)
  table.sort(names)
  local items = {}
  for _, name in ipairs(names) do
    local command = M.COMMANDS[name]
    if available(chat, command) and ("/" .. name):sub(1, #base) == base then
      table.insert(items,
        { word = "/" .. name, menu = command.description, user_data = { codecompanion_slash = name } })
    end
  end
  return items
end

-- CompleteDone: when a slash command was accepted, its word leaves the line and it runs.
function M.completed(chat, item)
  local data = type(item) == "table" and item.user_data or nil
  local name = type(data) == "table" and data.codecompanion_slash or nil
  local command = name and M.COMMANDS[name]
  if not command then
    return
  end
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local line = api.nvim_get_current_line()
  local word = "/" .. name
  local start = col - #word
  if start < 0 or line:sub(start + 1, col) ~= word then
    return
  end
  api.nvim_buf_set_text(chat.bufnr, row - 1, start, row - 1, col, { "" })
  local function insert(text)
    if not api.nvim_buf_is_valid(chat.bufnr) then
      return
    end
    api.nvim_buf_set_text(chat.bufnr, row - 1, start, row - 1, start, { text })
    for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
      pcall(api.nvim_win_set_cursor, win, { row, start + #text })
    end
  end
  vim.schedule(function() command.run(chat, insert) end) -- not inside the completion's own event
end

return M
