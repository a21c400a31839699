-- What `#`, `@`, `/` and `\` complete to in the chat, for every completion front end: the
-- built-in omnifunc (<C-_> or <C-x><C-o>), and nvim-cmp and blink.cmp sources registered at
-- setup() when those plugins are installed (`interactions.chat.opts.completion_provider`,
-- as CodeCompanion: "blink", "cmp" or "default"; found in that order when not set).
-- Accepting a slash command runs it.
-- luacheck: no self (the plugins call these as methods; they need no state)
local api = vim.api

local M = {}

M.SOURCE = "codecompanion_py"
local TRIGGER = "[#@\\/][{]?[%w_:.-]*$"

-- Where the word being completed starts in `before` (the line up to the cursor), or nil.
---@param before string
---@return integer|nil
function M.start(before)
  return before:find(TRIGGER)
end

-- The items for `base` ("#{bu", "/fi", "@{", "\\re"): { word, menu, user_data? } with the
-- source's kind of item in `group` (context, tool, slash, command), which Vim ignores.
---@param chat CodeCompanionChat|nil
---@param base string
---@return table[]
function M.items(chat, base)
  local items = {}
  local function add(word, menu, kind)
    if word:sub(1, #base) == base then
      table.insert(items, { word = word, menu = menu, group = kind })
    end
  end
  local sigil = base:sub(1, 1)
  if sigil == "#" then
    local context = require("codecompanion_py.chat.context")
    for _, kind in ipairs(context.KINDS) do
      add("#{" .. kind .. "}", context.DESCRIPTIONS[kind] or "editor context", "context")
    end
    for name, entry in pairs(context.own()) do
      add("#{" .. name .. "}", entry.description or "editor context", "context")
    end
  elseif sigil == "/" then
    for _, item in ipairs(require("codecompanion_py.chat.slash").items(chat or {}, base)) do
      item.group = "slash"
      table.insert(items, item)
    end
  elseif sigil == "@" then
    local ok, tools = pcall(require("codecompanion_py.rpc").request, "tools")
    for _, tool in ipairs(ok and tools or {}) do
      add("@{" .. tool.name .. "}", tool.description ~= "" and tool.description or tool.kind, "tool")
    end
  else
    for _, command in ipairs(chat and chat.commands or {}) do
      add("\\" .. command.name, command.description, "command")
    end
  end
  return items
end

local function chat_here()
  return require("codecompanion_py.chat").chats[api.nvim_get_current_buf()]
end

-- An item was accepted (its word is in the buffer): a slash command runs.
---@param item table
function M.accepted(item)
  local chat = chat_here()
  if chat and item then
    require("codecompanion_py.chat.slash").completed(chat, item)
  end
end

-- Items in LSP form for cmp and blink: each replaces the word from `start` (1-based) to the cursor.
local function lsp_items(before, row, kinds)
  local start = M.start(before)
  if not start then
    return {}
  end
  local out = {}
  for _, item in ipairs(M.items(chat_here(), before:sub(start))) do
    table.insert(out, {
      label = item.word,
      filterText = item.word,
      kind = kinds[item.group],
      detail = item.menu,
      documentation = item.menu and { kind = "markdown", value = item.menu } or nil,
      textEdit = {
        newText = item.word,
        range = { start = { line = row, character = start - 1 }, ["end"] = { line = row, character = #before } },
      },
      data = { user_data = item.user_data },
    })
  end
  return out
end

local function kinds_of(lsp_kinds)
  return { context = lsp_kinds.Variable, tool = lsp_kinds.Function, slash = lsp_kinds.Module,
    command = lsp_kinds.Keyword }
end

-- nvim-cmp's source (`require("cmp").register_source`).
---@return table
function M.cmp_source()
  local cmp = require("cmp")
  local source = {}
  function source:is_available() return vim.bo.filetype == "codecompanion" end
  function source:get_debug_name() return M.SOURCE end
  function source:get_trigger_characters() return { "#", "@", "/", "\\", "{" } end
  function source:get_keyword_pattern() return [[\%([#@/\\]{\?\)\?[[:alnum:]_:.-]*]] end
  function source:complete(params, callback)
    local before = params.context.cursor_before_line
    callback({ items = lsp_items(before, params.context.cursor.row - 1, kinds_of(cmp.lsp.CompletionItemKind)),
      isIncomplete = false })
  end
  function source:execute(item, callback)
    M.accepted({ user_data = item.data and item.data.user_data })
    callback(item)
  end
  return source
end

-- blink.cmp's source (its `module`): `new`, `enabled`, `get_completions`, `execute`.
M.blink = {}
---@return table
function M.blink.new()
  return setmetatable({}, { __index = M.blink })
end
---@return boolean
function M.blink:enabled() return vim.bo.filetype == "codecompanion" end
---@return string[]
function M.blink:get_trigger_characters() return { "#", "@", "/", "\\", "{" } end
---@param ctx { line: string, cursor: integer[] }
---@param callback fun(result: table)
---@return fun()
function M.blink:get_completions(ctx, callback)
  local before = ctx.line:sub(1, ctx.cursor[2])
  local kinds = require("blink.cmp.types").CompletionItemKind
  callback({ items = lsp_items(before, ctx.cursor[1] - 1, kinds_of(kinds)), is_incomplete_backward = true,
    is_incomplete_forward = false })
  return function() end
end
---@param _ table the blink context
---@param item table
---@param callback fun()
---@param default_implementation fun()
function M.blink:execute(_, item, callback, default_implementation)
  default_implementation()
  M.accepted({ user_data = item.data and item.data.user_data })
  callback()
end

local function installed(module)
  return (pcall(require, module))
end

-- Register the source with the provider the config names, or the first one installed; once
-- (the first chat does it, so nothing loads at startup).
---@param provider? string
function M.register(provider)
  if M.registered then
    return M.registered
  end
  M.registered = M.register_now(provider)
  return M.registered
end

---@param provider? string
function M.register_now(provider)
  if provider == nil then
    provider = installed("blink.cmp") and "blink" or installed("cmp") and "cmp" or "default"
  end
  if provider == "blink" and installed("blink.cmp") then
    local blink = require("blink.cmp")
    pcall(blink.add_source_provider, M.SOURCE,
      { name = "CodeCompanion", module = "codecompanion_py.chat.completion_blink", score_offset = 10 })
    pcall(blink.add_filetype_source, "codecompanion", M.SOURCE)
    return "blink"
  elseif provider == "cmp" and installed("cmp") then
    local cmp = require("cmp")
    cmp.register_source(M.SOURCE, M.cmp_source())
    local sources = vim.deepcopy(cmp.get_config().sources or {})
    table.insert(sources, 1, { name = M.SOURCE })
    cmp.setup.filetype("codecompanion", { enabled = true, sources = sources })
    return "cmp"
  end
  return "default"
end

return M
