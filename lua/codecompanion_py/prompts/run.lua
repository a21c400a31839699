-- Running a prompt of the library: a chat (its system messages, its user message sent when
-- `auto_submit`), the inline assistant (with its `placement`), or a workflow (workflow.lua).
local prompts = require("codecompanion_py.prompts")

local M = {}

-- `opts.adapter`: a name, or { name, model }.
local function adapter_of(item)
  local spec = item.opts.adapter
  if type(spec) == "table" then return spec.name, spec.model end
  return spec, nil
end

-- The system and user text of prompts `list`; nothing when a helper failed (said in one line).
local function split(item, list, context)
  local messages, failed = prompts.messages(item, list, context)
  if failed then
    return vim.notify(("CodeCompanion: %s: %s"):format(item.name, failed), vim.log.levels.WARN)
  end
  local system, user = {}, {}
  for _, message in ipairs(messages) do
    table.insert(message.role == "system" and system or user, message.content)
  end
  return system, table.concat(user, "\n\n")
end

-- The `#{...}` mentions of a prompt's `context` (CodeCompanion's file, symbols and url items).
local KINDS = { file = "file", symbols = "symbols", url = "fetch" }
local function mentions(item)
  local out = {}
  for _, entry in ipairs(type(item.context) == "table" and item.context or {}) do
    entry = type(entry) == "table" and entry or {}
    local kind, targets = KINDS[entry.type], entry.url or entry.path
    if not kind then
      vim.notify(("CodeCompanion: %s: context type %s is not file, symbols or url"):format(item.name,
        vim.inspect(entry.type)), vim.log.levels.WARN)
    end
    for _, target in ipairs(kind and (type(targets) == "table" and targets or { targets }) or {}) do
      table.insert(out, ("#{%s:%s}"):format(kind, tostring(target)))
    end
  end
  return table.concat(out, " ")
end

-- Open a chat for prompts `list` (the item's, or a workflow's first step).
---@param item codecompanion_py.PromptItem
---@param list codecompanion_py.PromptMessage[]
---@param context table prompts.context()
---@param extra string? words typed after `/alias`
---@return table? chat nil when a helper of the prompt failed
function M.chat(item, list, context, extra)
  local system, user = split(item, list, context)
  if not system then return nil end
  if extra and extra ~= "" then user = user ~= "" and (user .. "\n\n" .. extra) or extra end
  local adapter, model = adapter_of(item)
  local chat = require("codecompanion_py.chat").open({
    adapter = adapter,
    model = model,
    prompt = user,
    submit = false,
    system_prompts = system,
    ignore_system_prompt = item.opts.ignore_system_prompt == true,
    tools = type(item.tools) == "table" and item.tools or nil, -- not "none"
    mcp_servers = item.mcp_servers,
    context = { bufnr = context.bufnr, filetype = context.filetype },
  })
  if type(item.rules) == "table" then require("codecompanion_py.chat").load_rules(chat, item.rules) end
  -- its `context`: read now and listed in the chat's context block, as rules are
  local found, problems = require("codecompanion_py.chat.context").capture(chat, mentions(item))
  for _, problem in ipairs(problems) do vim.notify("CodeCompanion: " .. problem, vim.log.levels.WARN) end
  require("codecompanion_py.chat.shared").add_pending(chat, found)
  if #found > 0 then require("codecompanion_py.chat.buffer").show_context(chat) end
  if item.opts.auto_submit == true and user ~= "" then chat:submit() end
  return chat
end

-- `opts.pre_hook` (a markdown prompt's `pre_hook: name.fn`, a function of `name.lua` beside
-- it) runs first; a buffer number it returns is where an inline prompt writes. Nil: it failed.
local function pre_hook(item, context)
  local named = item.opts.pre_hook or item.pre_hook
  if named == nil then return context end
  local hook = type(named) == "string" and prompts.helper(item, named:match("^([%w_]+)%.([%w_]+)$")) or named
  local ok, result = type(hook) == "function", vim.inspect(named) .. " names no function of a .lua file beside it"
  if ok then ok, result = pcall(hook, context) end
  if not ok then
    return vim.notify(("CodeCompanion: %s: pre_hook: %s"):format(item.name, result), vim.log.levels.ERROR)
  end
  local into = type(result) == "number" and item.interaction == "inline" and vim.api.nvim_buf_is_valid(result)
  return into and prompts.context(result) or context
end

local function inline(item, context, extra)
  local system, user = split(item, item.prompts, context)
  if not system then return end
  local text = table.concat(vim.list_extend(system, { user, extra or "" }), "\n\n")
  local adapter, model = adapter_of(item)
  if vim.api.nvim_buf_is_valid(context.bufnr) then
    vim.api.nvim_set_current_buf(context.bufnr)
  end
  return require("codecompanion_py.inline").run({
    prompt = vim.trim(text),
    args = "",
    range = context.is_visual and 2 or 0,
    line1 = context.start_line,
    line2 = context.end_line,
    adapter = adapter,
    model = model,
    placement = item.opts.placement,
  })
end

-- Run `item` for `context`; `extra`: words typed after `/alias`.
---@param item codecompanion_py.PromptItem
---@param context table prompts.context()
---@param extra string?
function M.run(item, context, extra)
  if item.opts.user_prompt and (extra == nil or extra == "") then
    local question = type(item.opts.user_prompt) == "string" and item.opts.user_prompt or item.name
    return vim.ui.input({ prompt = question .. ": " }, function(typed)
      if typed and vim.trim(typed) ~= "" then
        M.run(item, context, typed)
      end
    end)
  end
  context = pre_hook(item, context)
  if not context then return end
  if item.opts.is_workflow or item.interaction == "workflow" then
    return require("codecompanion_py.prompts.workflow").start(item, context)
  elseif item.interaction == "inline" then
    return inline(item, context, extra)
  end
  return M.chat(item, item.prompts, context, extra)
end

-- `:[range]CodeCompanion /alias [words]`
---@param alias string
---@param rest string? the words after it
---@param cmd table? the user command's arguments (range, line1, line2)
function M.alias(alias, rest, cmd)
  local item = prompts.find(alias)
  if not item then
    return vim.notify(("CodeCompanion: no prompt in the library has the alias %q"):format(alias),
      vim.log.levels.ERROR)
  end
  local ranged = cmd and (cmd.range or 0) > 0
  local context = prompts.context(vim.api.nvim_get_current_buf(), ranged and cmd.line1 or nil,
    ranged and cmd.line2 or nil, ranged)
  return M.run(item, context, rest)
end

return M
