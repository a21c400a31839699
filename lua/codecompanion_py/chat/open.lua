-- Making a chat: :CodeCompanionChat and its subcommands, a new chat's buffer, window,
-- keymaps and callbacks, and code shared into a chat from another buffer.
local api = vim.api
local rpc = require("codecompanion_py.rpc")
local config = require("codecompanion_py.chat.config")
local buffer = require("codecompanion_py.chat.buffer")
local highlight = require("codecompanion_py.chat.highlight")
local object = require("codecompanion_py.chat.object")
local window = require("codecompanion_py.chat.window")

local M = {}

local INTRO = "Welcome to CodeCompanion ✨! Press ? for options"

local function chat_module()
  return require("codecompanion_py.chat")
end

-- `opts.send_code` (a boolean or a function): may code from a buffer go to the LLM?
local function can_send_code()
  local send = (config.all().opts or {}).send_code
  if type(send) == "function" then
    local ok, result = pcall(send)
    send = ok and result
  end
  if send == false then
    vim.notify("CodeCompanion: sending code is turned off (opts.send_code)", vim.log.levels.WARN)
  end
  return send ~= false
end

-- Lines of a buffer as CodeCompanion shares code: where they come from, then a fence.
local function code_message(context)
  local code = table.concat(context.lines, "\n")
  local fence = buffer.fence_for(code)
  return ("Here is some code from %s:\n\n%s%s\n%s\n%s"):format(context.relative or context.path, fence,
    context.filetype or "", code, fence)
end

-- The buffer a command was given in: its name, type and (for a range) its lines.
local function source_context(buf, line1, line2)
  local path = api.nvim_buf_get_name(buf)
  local context = {
    bufnr = buf,
    filetype = vim.bo[buf].filetype,
    path = path,
    relative = path ~= "" and vim.fn.fnamemodify(path, ":.") or ("[buffer " .. buf .. "]"),
  }
  if line1 and line2 then
    context.lines = api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
    context.start_line, context.end_line = line1, line2
  end
  return context
end

local function show_intro(buf)
  local intro = config.display().intro_message
  if intro == nil then
    intro = INTRO
  end
  if type(intro) == "string" and intro ~= "" then
    api.nvim_buf_set_extmark(buf, buffer.ns, 0, 0, { virt_text = { { "  " .. intro, "Comment" } },
      virt_text_pos = "eol" })
  end
end

-- The lines of a saved chat's turns (`opts.saved`, from :CodeCompanionHistory), ending with
-- the user's header, ready for the next message. A long chat comes with its latest turns
-- only (`saved.hidden` earlier ones left out, which the engine still sends to the LLM).
local function transcript_lines(saved)
  local lines = {}
  if (saved.hidden or 0) > 0 then
    local note = ("> (%d earlier messages are not shown; the LLM still has them)"):format(saved.hidden)
    vim.list_extend(lines, { note, "" })
  end
  for _, turn in ipairs(saved.transcript or {}) do
    local header = turn.role == "user" and config.user_header()
      or config.llm_header({ name = saved.adapter, formatted_name = saved.adapter })
    vim.list_extend(lines, { header, "" })
    vim.list_extend(lines, vim.split(turn.text, "\n", { plain = true }))
    table.insert(lines, "")
  end
  vim.list_extend(lines, { config.user_header(), "", "" })
  return lines
end

-- What the buffer does as it goes and as the user completes in it.
local function watch(chat)
  local buf, chats = chat.bufnr, chat_module()
  api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function() -- <C-c>, :bwipeout, or any other way the buffer goes
      chats.chats[buf] = nil
      if chats.last == buf then
        chats.last = nil
      end
      pcall(rpc.notify, "chat.close", { chat_id = buf })
      config.run_callbacks(chat, "on_closed")
      config.fire("ChatClosed", { bufnr = buf, id = buf })
    end,
  })
  api.nvim_create_autocmd("BufEnter", { buffer = buf, callback = function() chats.last = buf end })
  api.nvim_create_autocmd("CompleteDone", {
    buffer = buf,
    callback = function() require("codecompanion_py.chat.slash").completed(chat, vim.v.completed_item) end,
  })
end

---@class CodeCompanionOpenOpts
---@field adapter? string
---@field model? string
---@field command? string an agent's command (`commands.<name>` of its adapter) to start it with
---@field prompt? string the first message
---@field submit? boolean send `prompt` at once (the default)
---@field context? table the buffer the chat is opened from
---@field window? table `display.chat.window` for this chat
---@field saved? table a saved chat to go on with (:CodeCompanionHistory)
---@field system_prompts? string[]
---@field ignore_system_prompt? boolean
---@field tools? string[]
---@field fork_of? CodeCompanionChat a chat whose conversation this one copies (/fork)
---@field mcp_servers? string[]|"none" in place of `mcp.opts.default_servers`

---@param opts? CodeCompanionOpenOpts
---@return CodeCompanionChat
function M.open(opts)
  opts = opts or {}
  local chats = chat_module()
  local context = opts.context or source_context(api.nvim_get_current_buf())
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, "[CodeCompanion] " .. buf)
  vim.bo[buf].bufhidden = "hide" -- hidden, a chat keeps its buffer, its state and its stream
  vim.bo[buf].buflisted = (config.display().window or {}).buflisted == true
  api.nvim_buf_set_lines(buf, 0, -1, false, opts.saved and transcript_lines(opts.saved)
    or opts.fork_of and api.nvim_buf_get_lines(opts.fork_of.bufnr, 0, -1, false)
    or { config.user_header(), "", "" })
  local chat = object.new({
    bufnr = buf,
    id = buf,
    status = "idle",
    context = context,
    callbacks = {},
    adapter = { name = opts.adapter },
    open_payload = { chat_id = buf, adapter = opts.adapter, model = opts.model, command = opts.command,
      cwd = vim.fn.getcwd(),
      system_prompts = opts.system_prompts, ignore_system_prompt = opts.ignore_system_prompt, tools = opts.tools,
      mcp_servers = opts.mcp_servers, history_id = opts.saved and opts.saved.id or nil,
      fork_of = opts.fork_of and opts.fork_of.bufnr },
  })
  for event, fn in pairs(config.get("callbacks") or {}) do
    for _, f in ipairs(type(fn) == "table" and fn or { fn }) do
      if type(f) == "function" then
        chat:add_callback(event, f)
      end
    end
  end
  chats.chats[buf] = chat
  -- The engine starts on the chat (and a first chat starts the engine) while the rest of the
  -- window is made: the filetype alone costs Neovim about a millisecond of runtime searches.
  chats.open_in_engine(chat)
  pcall(vim.treesitter.language.register, "markdown", "codecompanion")
  local treesitter = config.display().treesitter ~= false and highlight.parser(buf) -- before the filetype's handlers
  vim.b[buf].ts_highlight = treesitter and true or nil -- as vim.treesitter.start sets it: no regex syntax first
  -- Highlighting is Neovim's largest cost while a reply streams (chat/highlight.lua); regex
  -- syntax (`display.chat.treesitter = false`) costs more than twice tree-sitter's. It starts
  -- once the command is done, as in CodeCompanion: the first request does not wait for it.
  vim.schedule(function()
    if api.nvim_buf_is_valid(buf) and not (treesitter and highlight.start(buf, config.user_header())) then
      vim.b[buf].ts_highlight = nil
      vim.bo[buf].syntax = "markdown"
    end
  end)
  -- As in CodeCompanion: the window opens, the filetype is set in it (an ftplugin's
  -- `setlocal wrap` is the chat window's) and ChatOpened fires, then the chat is made
  -- (ChatCreated), then a prompt given on the command line is sent.
  chats.show_chat(chat, opts.window)
  if opts.saved then
    require("codecompanion_py.chat.shared").restore(chat, opts.saved.context)
  end
  chats.load_rules(chat, require("codecompanion_py.chat.rules").autoload(config.all(), chat))
  require("codecompanion_py.chat.keymaps").set(chat, config.all(), require("codecompanion_py.chat.actions").keymaps)
  require("codecompanion_py.chat.slash").set_keymaps(chat)
  show_intro(buf)
  vim.bo[buf].omnifunc = "v:lua.require'codecompanion_py.chat'.omnifunc"
  require("codecompanion_py.chat.completion").register(config.opts().completion_provider)
  watch(chat)
  config.fire("ChatCreated", { bufnr = buf, id = buf })
  config.run_callbacks(chat, "on_created")
  for _, win in ipairs(window.windows(buf)) do
    api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
  end
  if opts.prompt and opts.prompt ~= "" then
    api.nvim_buf_set_lines(buf, -2, -1, false, vim.split(opts.prompt, "\n", { plain = true }))
    if opts.submit ~= false then
      chats.submit(buf)
    end
  elseif config.display().start_in_insert_mode then
    vim.cmd("startinsert!")
  end
  return chat
end

-- :CodeCompanionChat Toggle: hide the last chat when it shows, show it when hidden, or a new one.
---@param opts? CodeCompanionOpenOpts for a new chat
---@return CodeCompanionChat|nil
function M.toggle(opts)
  local chats = chat_module()
  local chat = chats.last_chat()
  if chat and window.visible(chat.bufnr) then
    return chats.hide(chat)
  elseif chat then
    chats.show_chat(chat)
    return chat
  end
  return M.open(opts)
end

-- :'<,'>CodeCompanionChat Add: the lines into the last chat (a new one if none), shown.
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return CodeCompanionChat|nil
function M.add(buf, line1, line2)
  if not can_send_code() then
    return
  end
  local chats = chat_module()
  local context = source_context(buf, line1, line2)
  local chat = chats.last_chat() or M.open({ context = context })
  if object.busy(chat) then
    return
  end
  buffer.add_to_message(chat, code_message(context))
  chats.show_chat(chat)
  return chat
end

---@return nil
function M.refresh_cache()
  rpc.config_changed() -- the engine reads adapters and tools afresh with the next command
  vim.notify("CodeCompanion: refreshed the cache for all chat buffers")
end

-- CodeCompanion's event to ask for a refresh.
api.nvim_create_autocmd("User", {
  pattern = "CodeCompanionChatRefreshCache",
  callback = function() M.refresh_cache() end,
})

-- The files the LLM edited or created this session, in the order first edited (`Changes`).
local edited, at = {}, {}
api.nvim_create_autocmd("User", {
  pattern = "CodeCompanionFileEdited",
  callback = function(ev)
    local path = type(ev.data) == "table" and ev.data.path
    if type(path) == "string" and path ~= "" then
      at[path] = at[path] or #edited + 1
      edited[at[path]] = vim.tbl_extend("force", edited[at[path]] or {}, ev.data)
      require("codecompanion_py.code_review").edited(path)
    end
  end,
})

-- :CodeCompanionChat Changes: those files in a new quickfix list (`:colder` gives the user's back).
---@return nil
function M.changes()
  if #edited == 0 then
    return vim.notify("CodeCompanion: no files have been edited this session", vim.log.levels.WARN)
  end
  vim.fn.setqflist({}, " ", { title = "Files edited by the LLM", items = vim.tbl_map(function(e)
    return { filename = e.path, lnum = e.line or 1,
      text = (e.tool == "create_file" and "created" or "edited") .. " by " .. tostring(e.tool) }
  end, edited) })
  vim.cmd.copen()
end

local SUBCOMMANDS = { toggle = M.toggle, changes = M.changes, refreshcache = M.refresh_cache }

-- :[range]CodeCompanionChat [Toggle | Add | Changes | RefreshCache] [adapter=NAME model=NAME command=NAME] [prompt]
-- As CodeCompanion reads it: those `key=value` anywhere; any other is a word of the prompt.
-- `cmd` is the user command's table (its range); a range shares those lines with the chat.
---@param fargs? string[]
---@param cmd? { range?: integer, line1?: integer, line2?: integer }
---@return CodeCompanionChat|nil
function M.command(fargs, cmd)
  fargs = fargs or {}
  cmd = cmd or {}
  local buf = api.nvim_get_current_buf()
  local ranged = (cmd.range or 0) > 0
  local opts, words = {}, {}
  for _, arg in ipairs(fargs) do
    local key, value = arg:match("^(%w+)=(.+)$")
    if key == "adapter" or key == "model" or key == "command" then
      opts[key] = value
    else
      table.insert(words, arg)
    end
  end
  local sub = #words == 1 and words[1]:lower()
  if sub == "add" then
    local row = api.nvim_win_get_cursor(0)[1]
    return M.add(buf, ranged and cmd.line1 or row, ranged and cmd.line2 or row)
  elseif SUBCOMMANDS[sub] then
    return SUBCOMMANDS[sub](opts)
  end
  opts.prompt = table.concat(words, " ")
  if ranged and not chat_module().chats[buf] then
    if not can_send_code() then
      return
    end
    opts.context = source_context(buf, cmd.line1, cmd.line2)
    local code = code_message(opts.context)
    -- with a prompt: sent at once, the code after it; without: the code waits for the user's words
    opts.submit = opts.prompt ~= ""
    opts.prompt = opts.prompt ~= "" and (opts.prompt .. "\n\n" .. code) or code
  end
  return M.open(opts)
end

return M
