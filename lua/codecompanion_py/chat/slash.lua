-- Slash commands in the chat, as CodeCompanion's: type `/`, complete (<C-_> or <C-x><C-o>),
-- accept one, and it runs: the `/word` goes and what the command gives takes its place.
--   /buffer   pick an open buffer: `#{buffer:path}` (read when the message is sent)
--   /file     pick a project file: `#{file:path}`
--   /image    pick an image (of the project, or any path): `#{image:path}`, sent in the
--             provider's image format
--   /rules    add a rule group (rules files) to the chat
--   /fetch    a web page: `#{fetch:url}`, read by the engine when the message goes
--   /help     a section of Vim's help: `#{help:tag}`
--   /symbols  the tree-sitter outline of a file: `#{symbols:path}`
--   /share    the chat as a secret GitHub gist (`opts.token`), scrubbed; the engine says where
--   /compact  summarise the earlier turns now (an agent keeps its own context: \compact)
--   /mcp      start, stop, inspect MCP servers, attach a resource (mcp.lua); a running
--             server's prompts are /mcp:<server>:<prompt>
--   /now      the date and time
--   /fork     (HTTP chats) a new chat with this one's conversation, tools and context
--   /rename   the chat's title in the history
--   /rewind   back to before one of your messages: its files, the conversation or both
--   /command  (agent chats) start the agent again with another of its `commands`
--   /mode, /acp_session_options, /resume   (agent chats) the agent's options, an earlier session
-- Pickers: telescope, fzf-lua, mini.pick or snacks when installed (or named by a command's
-- `opts.provider`), else vim.ui.select (pickers.lua).
local api = vim.api
local pickers = require("codecompanion_py.pickers")

local M = {}

local OTHER_PATH = "Another path..."

-- The project's files, relative to the cwd, as the engine lists them (project_files.py).
---@return string[]
local function project_files()
  local ok, files = pcall(require("codecompanion_py.rpc").request, "files.list", { cwd = vim.fn.getcwd() })
  if not ok then
    vim.notify("CodeCompanion: cannot list the project's files: " .. tostring(files), vim.log.levels.ERROR)
  end
  return ok and type(files) == "table" and files or {}
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

-- A command that picks a path and inserts `#{kind:path}`.
local function pick_path(kind, prompt, list)
  return function(_, insert, provider)
    pickers.select(list(), { prompt = prompt }, function(path)
      if path then insert("#{" .. kind .. ":" .. path .. "}") end
    end, provider)
  end
end

-- A command that asks for a word and inserts `#{kind:word}`.
local function ask(kind, prompt, completion)
  return function(_, insert)
    vim.ui.input({ prompt = prompt, completion = completion }, function(typed)
      typed = typed and vim.trim(typed) or ""
      if typed ~= "" then insert("#{" .. kind .. ":" .. typed .. "}") end
    end)
  end
end

local engine = require("codecompanion_py.chat.actions").engine

M.COMMANDS = {
  buffer = { description = "Share an open buffer", run = pick_path("buffer", "Buffer", file_buffers) },
  file = { description = "Share a file of the project", run = pick_path("file", "File", project_files) },
  image = {
    description = "Share an image",
    vision = true, -- offered when the model reads images (the adapter's `opts.vision`)
    run = function(_, insert, provider)
      local images = vim.tbl_filter(function(path)
        local ext = path:match("%.(%w+)$")
        return ext ~= nil and require("codecompanion_py.chat.context").IMAGE_TYPES[ext:lower()] == true
      end, project_files())
      table.insert(images, OTHER_PATH)
      pickers.select(images, { prompt = "Image" }, function(path)
        if path == OTHER_PATH then
          -- a screenshot tool that copied the file's path: offered as the answer
          local ok, copied = pcall(vim.fn.getreg, "+")
          copied = ok and vim.trim(copied or ""):match("^[^\n]+%.%w+$") or ""
          vim.ui.input({ prompt = "Image path: ", completion = "file", default = copied }, function(typed)
            if typed and vim.trim(typed) ~= "" then insert("#{image:" .. vim.trim(typed) .. "}") end
          end)
        elseif path then
          insert("#{image:" .. path .. "}")
        end
      end, provider)
    end,
  },
  rules = {
    description = "Add rules files to the chat",
    run = function(chat, _, provider)
      local rules = require("codecompanion_py.chat.rules")
      local groups = rules.groups(require("codecompanion_py").config or {})
      local names = vim.tbl_keys(groups)
      table.sort(names)
      pickers.select(names, {
        prompt = "Rules",
        format_item = function(name)
          return name .. (groups[name].description and (": " .. groups[name].description) or "")
        end,
      }, function(name)
        if name then
          local added = require("codecompanion_py.chat").load_rules(chat, { name })
          vim.notify(("CodeCompanion: %d rules file(s) of %s will go with your next message"):format(#added, name))
        end
      end, provider)
    end,
  },
  fetch = { description = "Share a web page (read when the message goes)", run = ask("fetch", "URL: ") },
  help = { description = "Share a section of Vim's help", run = ask("help", "Help tag: ", "help") },
  symbols = { description = "Share the outline of a file (tree-sitter)",
    run = pick_path("symbols", "Symbols of", project_files) },
  compact = {
    description = "Summarise the earlier turns to free the context window",
    http = true,
    run = function(chat) require("codecompanion_py.chat").compact(chat) end,
  },
  share = {
    description = "Share the chat as a secret GitHub gist (scrubbed of secrets)",
    run = function(chat)
      local spec = (require("codecompanion_py").chat_option("slash_commands") or {}).share
      local opts = type(spec) == "table" and type(spec.opts) == "table" and spec.opts or {}
      vim.ui.input({ prompt = "Gist description: ", default = chat.title or "CodeCompanion Chat" }, function(about)
        if not about then return end
        vim.ui.input({ prompt = "Gist filename: ", default = "codecompanion-chat.md" }, function(name)
          if not name then return end -- the engine scrubs the text, posts it and says where it went
          require("codecompanion_py.rpc").notify("chat.share", { chat_id = chat.bufnr, token = opts.token,
            url = opts.url, description = vim.trim(about), filename = vim.trim(name),
            text = table.concat(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n") })
        end)
      end)
    end,
  },
  mcp = {
    description = "Start, stop or look at MCP servers; attach a resource",
    run = function(chat, insert) require("codecompanion_py.mcp").slash(chat, insert) end,
  },
  fork = {
    description = "Fork the chat: a copy of it to take elsewhere",
    http = true,
    run = function(chat)
      if not require("codecompanion_py.chat.object").busy(chat, "wait for the reply (or press q) before forking") then
        require("codecompanion_py.chat").open({ adapter = chat.adapter.name, model = chat.adapter.model,
          fork_of = chat })
      end
    end,
  },
  rename = {
    description = "Rename the chat (its title in the history)",
    run = function(chat)
      vim.ui.input({ prompt = "Title: " }, function(title)
        if title and vim.trim(title) ~= "" then
          require("codecompanion_py.rpc").notify("chat.rename", { chat_id = chat.bufnr, title = title })
        end
      end)
    end,
  },
  rewind = {
    description = "Rewind to before one of your messages (its files, the conversation or both)",
    run = function(chat) require("codecompanion_py.chat.rewind").pick(chat) end,
  },
  now = {
    description = "Insert the date and time",
    run = function(_, insert) insert(os.date("%a, %d %b %Y %H:%M:%S %z")) end,
  },
  mode = { description = "Change the agent's mode, model or options", agent = true,
    run = engine("chat.agent_options") },
  acp_session_options = { description = "Change the agent's session options (mode, model...)", agent = true,
    run = engine("chat.agent_options") },
  resume = { description = "Resume an earlier session of the agent", agent = true, run = engine("chat.sessions") },
  command = {
    description = "Start the agent again with another of its commands (a new session)",
    agent = true,
    run = function(chat, _, provider)
      local rpc = require("codecompanion_py.rpc")
      local ok, names = pcall(rpc.request, "chat.agent_commands", { chat_id = chat.bufnr })
      if not ok or #names < 2 then
        return vim.notify("CodeCompanion: /command needs an agent with more than one command in its `commands`"
          .. (ok and "" or (": " .. tostring(names))), vim.log.levels.WARN)
      end
      pickers.select(names, { prompt = "Select Command" }, function(name)
        if name and rpc.notify("chat.open", vim.tbl_extend("force", chat.open_payload, { command = name })) then
          chat.open_payload.command = name -- kept for an engine restart
          vim.notify(("CodeCompanion: switched to the `%s` command"):format(name))
        end
      end, provider)
    end,
  },
}

-- `interactions.chat.slash_commands`: the user's own commands (a `callback` called with the
-- chat, as CodeCompanion's), `enabled` (a boolean, or a function given { adapter }) and
-- `description` over the built-ins.
local function user_commands()
  local configured = require("codecompanion_py").chat_option("slash_commands")
  return type(configured) == "table" and configured or {}
end

-- A command given by `path` (a Lua file, or a module on 'runtimepath'), run as CodeCompanion
-- runs one: its `enabled(chat)`, then `.new({ Chat, config, context }):execute()`.
local function path_command(spec)
  return function(chat)
    local ok, err = pcall(function()
      local found, class = pcall(require, spec.path)
      class = found and class or assert(loadfile(vim.fs.normalize(spec.path)))()
      local on, why = (class.enabled or function() end)(chat)
      return on == false and error(why or "not enabled", 0)
        or class.new({ Chat = chat, config = spec, context = chat.context }):execute({})
    end)
    return ok or vim.notify(("CodeCompanion: /%s: %s"):format(spec.path, err), vim.log.levels.WARN)
  end
end

-- A library prompt as `/alias`: its user text (placeholders filled from the buffer the chat
-- was opened from) goes into the message, its tools as `@{tool}`.
local function library_command(item)
  return {
    description = item.description or item.name,
    run = function(chat, insert)
      local prompts = require("codecompanion_py.prompts")
      local buf = chat.context and chat.context.bufnr
      local context = prompts.context(buf and api.nvim_buf_is_valid(buf) and buf or nil)
      local list = (item.opts.is_workflow and item.prompts[1]) or item.prompts
      local texts, messages, failed = {}, prompts.messages(item, list, context)
      if failed then -- the helper's reason, as `:CodeCompanion /alias` says it; nothing inserted
        return vim.notify(("CodeCompanion: %s: %s"):format(item.name, failed), vim.log.levels.WARN)
      end
      for _, message in ipairs(messages) do
        if message.role == "user" then
          table.insert(texts, message.content)
        end
      end
      local tools = type(item.tools) == "table" and item.tools or {}
      local mentions = table.concat(vim.tbl_map(function(tool) return "@{" .. tool .. "} " end, tools))
      insert(mentions .. table.concat(texts, "\n\n"))
    end,
  }
end

-- Every command in effect, by name.
---@return table<string, table>
function M.commands()
  local out = {}
  for _, item in ipairs(require("codecompanion_py.prompts").items()) do
    local alias = item.opts.alias
    if type(alias) == "string" and item.opts.is_slash_cmd ~= false then
      out[alias] = library_command(item)
    end
  end
  local servers = vim.tbl_get(require("codecompanion_py").config or {}, "mcp", "servers")
  if type(servers) == "table" and next(servers) and require("codecompanion_py.rpc").running() then
    -- the prompts of the MCP servers that run (asking never starts the engine)
    for name, command in pairs(require("codecompanion_py.mcp").prompt_commands()) do
      out[name] = command
    end
  end
  for name, command in pairs(M.COMMANDS) do
    out[name] = command
  end
  for name, spec in pairs(user_commands()) do
    if type(spec) == "table" and name ~= "opts" then
      local base = out[name] or {}
      local callback = spec.callback or (not base.run and type(spec.path) == "string" and path_command(spec)) or nil
      out[name] = {
        description = spec.description or base.description or name,
        agent = base.agent,
        http = base.http,
        vision = base.vision,
        enabled = spec.enabled,
        keymaps = spec.keymaps,
        run = type(callback) == "function" and function(chat) callback(chat) end or base.run,
        provider = type(spec.opts) == "table" and spec.opts.provider or nil,
      }
    elseif spec == false then
      out[name] = nil
    end
  end
  return out
end

local function available(chat, command)
  local agent_chat = chat.adapter and chat.adapter.type == "acp"
  if not command.run or (command.agent and not agent_chat) or (command.http and agent_chat)
      or (command.vision and chat.adapter and chat.adapter.vision == false) then
    return false
  end
  if type(command.enabled) == "function" then
    local ok, on = pcall(command.enabled, { adapter = vim.deepcopy(chat.adapter) })
    return ok and on ~= false
  end
  return command.enabled ~= false
end

-- `slash_commands.<name>.keymaps.modes`: keys that run the command in the chat.
---@param chat CodeCompanionChat
function M.set_keymaps(chat)
  -- only the user's commands have keymaps: the library is not read (nor the engine waited for) here
  for name, spec in pairs(user_commands()) do
    local modes = type(spec) == "table" and type(spec.keymaps) == "table" and spec.keymaps.modes or {}
    for mode, keys in pairs(modes) do
      for _, lhs in ipairs(type(keys) == "table" and keys or { keys }) do
        vim.keymap.set(mode, lhs, function() M.run(chat, name) end,
          { buffer = chat.bufnr, desc = "CodeCompanion: /" .. name })
      end
    end
  end
end

-- A command's `insert`: its text at row (1-based), col of the chat, whenever it comes (a picker
-- answers later), and the cursor after it to type on (in normal mode on its last character, as `P`).
local function inserter(chat, row, col)
  return function(text)
    local buf = chat.bufnr
    if not (api.nvim_buf_is_valid(buf) and vim.bo[buf].modifiable) then
      return
    end
    local lines = vim.split(text, "\n", { plain = true })
    api.nvim_buf_set_text(buf, row - 1, col, row - 1, col, lines)
    local last_row, last_col = row + #lines - 1, (#lines == 1 and col or 0) + #lines[#lines]
    last_col = api.nvim_get_mode().mode:sub(1, 1) == "i" and last_col or math.max(0, last_col - 1)
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      pcall(api.nvim_win_set_cursor, win, { last_row, last_col })
    end
  end
end

-- Run command `name` with what it gives inserted at the cursor.
---@param chat CodeCompanionChat
---@param name string
function M.run(chat, name)
  local command = M.commands()[name]
  if not command or not available(chat, command) then
    local why = command and command.vision and chat.adapter.vision == false and ": its model does not read images" or ""
    return vim.notify("CodeCompanion: /" .. name .. " is not available in this chat" .. why, vim.log.levels.WARN)
  end
  command.run(chat, inserter(chat, unpack(api.nvim_win_get_cursor(0))), command.provider)
end

-- Completion items for `base` ("/fi"): each command with its description.
---@param chat CodeCompanionChat
---@param base string
---@return table[]
function M.items(chat, base)
  local commands = M.commands()
  local names = vim.tbl_keys(commands)
  table.sort(names)
  local items = {}
  for _, name in ipairs(names) do
    local command = commands[name]
    if available(chat, command) and ("/" .. name):sub(1, #base) == base then
      table.insert(items,
        { word = "/" .. name, menu = command.description, user_data = { codecompanion_slash = name } })
    end
  end
  return items
end

-- CompleteDone: when a slash command was accepted, its word leaves the line and it runs.
---@param chat CodeCompanionChat
---@param item table vim.v.completed_item
function M.completed(chat, item)
  local data = type(item) == "table" and item.user_data or nil
  local name = type(data) == "table" and data.codecompanion_slash or nil
  local command = name and M.commands()[name]
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
  local insert = inserter(chat, row, start)
  vim.schedule(function() command.run(chat, insert, command.provider) end) -- not inside the completion's own event
end

return M
