-- The functions of CodeCompanion.nvim's `require("codecompanion")` that configs and keymaps
-- call, over this plugin (lua/codecompanion/init.lua returns this module). What this plugin
-- does not have yet says so when called.
local M = {}

local function chat_module()
  return require("codecompanion_py.chat")
end

---@param opts? table
function M.setup(opts)
  require("codecompanion_py").setup(opts)
end

-- Extensions (codecompanion_py/extensions.lua): their exports by name, and registering one.
M.extensions = require("codecompanion_py.extensions").manager

---@param name string
---@param extension table
---@return boolean ok
function M.register_extension(name, extension)
  return require("codecompanion_py.extensions").register(name, extension)
end

-- chat({ params = { adapter, model, command }, args = "prompt", user_prompt = "...", subcommand = "toggle" | ... })
---@param args? table
---@return CodeCompanionChat|nil
function M.chat(args)
  args = args or {}
  if args.subcommand then
    return chat_module().command({ args.subcommand }, args)
  end
  local params = args.params or {}
  return chat_module().open({
    adapter = params.adapter,
    model = params.model,
    command = params.command,
    prompt = args.user_prompt or args.args,
    window = args.window_opts,
  })
end

-- A CLI terminal that shows, or was toggled last, is toggled instead of the chat.
---@param args? { params?: table }
---@return CodeCompanionChat|nil
function M.toggle(args)
  return not require("codecompanion_py.cli").toggle() and chat_module().toggle(args and args.params or nil) or nil
end
M.toggle_chat = M.toggle

-- add({ line1, line2 }): those lines of the current buffer into the last chat.
---@param args? { line1?: integer, line2?: integer }
---@return CodeCompanionChat|nil
function M.add(args)
  args = args or {}
  local row = vim.api.nvim_win_get_cursor(0)[1]
  return chat_module().add(vim.api.nvim_get_current_buf(), args.line1 or row, args.line2 or args.line1 or row)
end

-- The files the LLM edited this session, in the quickfix list.
---@return nil
function M.changes()
  chat_module().changes()
end

-- Back to before one of a chat's messages: `turn` is its `## Me` counted from the top (the
-- files, the conversation or both are asked); without a turn, the list of them.
---@param opts? { bufnr?: integer, turn?: integer, restore?: "all"|"files"|"conversation" }
function M.rewind(opts)
  opts = opts or {}
  local chat = M.buf_get_chat(opts.bufnr) or M.last_chat()
  if not chat then
    return vim.notify("CodeCompanion: there is no chat to rewind", vim.log.levels.WARN)
  end
  local rewind = require("codecompanion_py.chat.rewind")
  if opts.turn then
    return rewind.to(chat.bufnr, opts.turn, opts.restore)
  end
  rewind.pick(chat)
end

-- The engine reads adapters and tools afresh.
---@return nil
function M.chat_refresh_cache()
  chat_module().refresh_cache()
end

---@return CodeCompanionChat|nil
function M.last_chat()
  return chat_module().last_chat()
end

---@param bufnr? integer the current buffer when nil
---@return CodeCompanionChat|nil
function M.buf_get_chat(bufnr)
  local chats = chat_module().chats
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  return chats[bufnr]
end

-- The last chat closes (its buffer goes).
---@return nil
function M.close_last_chat()
  local chat = M.last_chat()
  if chat then
    chat:close()
  end
end

---@param bufnr integer
function M.restore(bufnr)
  local chat = M.buf_get_chat(bufnr)
  if chat then
    chat.ui.open()
  end
end

local FEATURES = { chat = true, tools = true, acp = true, adapters = true, events = true, inline = true, cmd = true,
  actions = true, prompt_library = true, workflows = true, history = true, cli = true, extensions = true,
  ["function-calling"] = true, code_review = true }

-- has("chat"), has({ "chat", "tools" }): whether this plugin has the feature(s).
---@param feature string|string[]
---@return boolean
function M.has(feature)
  if type(feature) == "table" then
    for _, f in ipairs(feature) do
      if not FEATURES[f] then
        return false
      end
    end
    return true
  end
  return FEATURES[feature] == true
end

-- CodeCompanion's `inline(args)` and `cmd(args)`: `args` as a user command gets it
-- ({ args, range, line1, line2 }), or a string.
---@param args table|string
function M.inline(args)
  args = type(args) == "table" and args or { args = args }
  return require("codecompanion_py.inline").run(args)
end

---@param args? table|string
function M.cmd(args)
  return require("codecompanion_py.inline").cmd(type(args) == "table" and args.args or args)
end

---@param args? table|string
function M.actions(args)
  return require("codecompanion_py.palette").open(type(args) == "table" and args or { args = args })
end

-- CodeCompanion's `prompt(alias)`: run the library prompt with that alias.
---@param alias string
---@param args? table
function M.prompt(alias, args)
  return require("codecompanion_py.prompts.run").alias(alias, "", args)
end

-- The CLI interaction (cli.lua): cli(), cli("prompt", opts), cli({ agent, prompt = true }).
---@param prompt_or_opts? string|table
---@param opts? table
function M.cli(prompt_or_opts, opts)
  return require("codecompanion_py.cli").cli(prompt_or_opts, opts)
end

---@return nil
function M.toggle_cli()
  require("codecompanion_py.cli").toggle_cli()
end

-- code_review({ subcommand = "accept" | "all" | "approve" | "comment" | "comments" | "ignore" | "share" | "start" })
---@param args? table
function M.code_review(args)
  return require("codecompanion_py.code_review").run(args)
end

-- Edit predictions' state, for statuslines: { enabled, state = "off"|"idle"|"waiting"|"shown"|"error", ... }.
---@return table
function M.completion_status()
  local completion = package.loaded["codecompanion_py.completion"]
  return completion and completion.status() or { enabled = false, state = "off" }
end

return M
