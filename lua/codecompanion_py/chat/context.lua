-- Editor context in a message, CodeCompanion's `#{...}`: what each names is read from the
-- editor when the message is sent and goes with it (the engine adds it to the user's turn as
-- a block the LLM can read; codecompanion_py/chat/context.py).
--   #{buffer}  #{buffer:name}  #{buffers}  #{selection}  #{viewport}  #{diagnostics}
--   #{diff}    #{quickfix}     #{messages}  #{terminal}  #{file:path}  #{image:path}
-- `#{buffer}{diff}` / `#{buffer}{all}` say how a shared buffer is followed (chat/shared.lua).
-- A capture larger than `interactions.chat.opts.max_context_chars` (default 100,000) is cut,
-- with a line that says so, so a huge buffer never goes whole.
local api = vim.api

local M = {}

M.DEFAULT_MAX_CHARS = 100000

local function is_chat(buf)
  return vim.bo[buf].filetype == "codecompanion"
end

local function is_file_buffer(buf)
  return api.nvim_buf_is_valid(buf) and api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == ""
    and not is_chat(buf) and api.nvim_buf_get_name(buf) ~= ""
end

local words = require("codecompanion_py.words")
local relative = words.buffer_name

-- The buffer the user works in: the one the chat was opened from, else the last file
-- buffer used.
local function source_buffer(chat)
  local buf = chat.context and chat.context.bufnr
  if buf and api.nvim_buf_is_valid(buf) and not is_chat(buf) then
    return buf
  end
  local best, last_used
  for _, info in ipairs(vim.fn.getbufinfo({ buflisted = 1 })) do
    if is_file_buffer(info.bufnr) and (not last_used or info.lastused > last_used) then
      best, last_used = info.bufnr, info.lastused
    end
  end
  return best
end

local function buffer_item(buf, kind)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  return {
    kind = kind,
    bufnr = buf,
    label = ("%s (%s)"):format(relative(buf), words.count(#lines, "line")),
    path = api.nvim_buf_get_name(buf),
    filetype = vim.bo[buf].filetype,
    content = table.concat(lines, "\n"),
  }
end

-- `#{buffer:name}`: a loaded buffer whose path ends with `name` (or holds it).
local function find_buffer(name)
  local fallback
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if is_file_buffer(buf) then
      local path = api.nvim_buf_get_name(buf)
      if path:sub(-#name) == name then
        return buf
      end
      if not fallback and path:find(name, 1, true) then
        fallback = buf
      end
    end
  end
  return fallback
end

local IMAGE_TYPES = { png = true, jpg = true, jpeg = true, gif = true, webp = true }
M.IMAGE_TYPES = IMAGE_TYPES

local capture = {}

function capture.buffer(chat, arg)
  local buf = arg and find_buffer(arg) or (not arg and source_buffer(chat))
  if not buf then
    return nil, arg and ("no open buffer matches %q"):format(arg) or "there is no file buffer to share"
  end
  return buffer_item(buf, "buffer")
end

-- A capture of a named file, `read(arg, path)`, for an HTTP chat only: an agent reads it itself
-- (the ACP chat sends it as a resource).
local function named_file(kind, read)
  return function(chat, arg)
    if chat.adapter and chat.adapter.type == "acp" then
      return {}
    end
    if not arg then
      return nil, ("name the %s: #{%s:path}"):format(kind, kind)
    end
    return read(arg, vim.fn.fnamemodify(require("codecompanion_py.files").expand(arg), ":p"))
  end
end

-- `#{file:path}` (what /file inserts): a file read from disk.
capture.file = named_file("file", function(_, path)
  local content, why = require("codecompanion_py.files").read_text(path)
  if not content then
    return nil, why
  end
  local lines = select(2, content:gsub("\n", "")) + (content:sub(-1) == "\n" and 0 or 1)
  return {
    kind = "file",
    label = ("%s (%s)"):format(vim.fn.fnamemodify(path, ":."), words.count(lines, "line")),
    path = path,
    filetype = vim.filetype.match({ filename = path }) or "",
    content = content:gsub("\n$", ""),
  }
end)

-- `#{image:path}` (what /image inserts): the engine reads the file and sends it in the
-- provider's image format; an agent gets it from the message itself.
capture.image = named_file("image", function(arg, path)
  if vim.fn.filereadable(path) == 0 then
    return nil, arg .. " is not a readable file"
  end
  -- a project's name that links out of it (logo.png -> ~/private.png) is refused, as #{file:} does
  local cwd, root, real = vim.fn.getcwd(), vim.uv.fs_realpath(vim.fn.getcwd()) or "", vim.uv.fs_realpath(path) or ""
  local function under(p, dir) return p:sub(1, #dir + 1) == dir .. "/" end
  if under(path, cwd) and not under(real, root) then
    return nil, ("%s is a link to %s, outside the project; to share that file, name it itself"):format(arg,
      vim.fn.fnamemodify(real, ":~"))
  end
  if not IMAGE_TYPES[(path:match("%.(%w+)$") or ""):lower()] then
    return nil, arg .. " is not an image (png, jpg, jpeg, gif or webp)"
  end
  return { kind = "image", label = vim.fn.fnamemodify(path, ":~:."), path = path }
end)

-- `#{fetch:url}` (what /fetch inserts): the engine reads the page when the message goes
-- (cached for a while); an agent fetches what it needs itself.
function capture.fetch(chat, arg)
  if chat.adapter and chat.adapter.type == "acp" then
    return {}
  end
  if not arg or not arg:match("^https?://") then
    return nil, "name an http(s) URL: #{fetch:https://...}"
  end
  return { kind = "fetch", label = arg, path = arg }
end

-- `#{help:tag}` (what /help inserts): the section of Vim's help that `tag` opens.
function capture.help(_, arg)
  if not arg then
    return nil, "name a help tag: #{help:tag}"
  end
  -- the tag itself, else as `:help` finds a word: the option, the command, the function, then
  -- the best completion
  local ok, completed = pcall(vim.fn.getcompletion, arg, "help")
  local candidates = { arg, "'" .. arg .. "'", ":" .. arg, arg .. "()", ok and completed[1] or nil }
  local files = {} -- candidate tag -> its help file, from the first tags file that has it
  for _, tags in ipairs(api.nvim_get_runtime_file("doc/tags", true)) do
    for _, line in ipairs(vim.fn.readfile(tags)) do
      local tag, name = line:match("^([^\t]+)\t([^\t]+)\t")
      if tag and not files[tag] and vim.list_contains(candidates, tag) then
        files[tag] = vim.fs.joinpath(vim.fs.dirname(tags), name)
      end
    end
  end
  arg = vim.iter(candidates):find(function(tag) return files[tag] end) or arg
  local file = files[arg]
  if not file then
    return nil, ("there is no help tag %q"):format(arg)
  end
  local lines = vim.fn.readfile(file)
  local start = vim.iter(ipairs(lines)):find(function(_, line) return line:find("*" .. arg .. "*", 1, true) end)
  if not start then
    return nil, ("the help tag %q is not in %s"):format(arg, file)
  end
  local out = {}
  for i = start, math.min(#lines, start + 199) do
    local next_tag = i > start + 1 and vim.trim(lines[i - 1]) == "" and lines[i]:match("%*[^%s%*]+%*%s*$")
    if i > start and (lines[i]:match("^====") or lines[i]:match("^%-%-%-%-") or next_tag) then
      break
    end
    table.insert(out, lines[i])
  end
  return { kind = "help", label = ("Vim help *%s* (%s)"):format(arg, vim.fn.fnamemodify(file, ":t")),
    filetype = "help", content = table.concat(out, "\n") }
end

local SYMBOL_WORDS = { "function", "method", "class", "struct", "interface", "enum", "trait", "impl", "module",
  "type" }

local function symbol_kind(node_type)
  if not (node_type:match("_declaration$") or node_type:match("_definition$") or node_type:match("_item$")
      or node_type:match("^local_function")) then
    return nil
  end
  for _, word in ipairs(SYMBOL_WORDS) do
    if node_type:find(word, 1, true) then
      return word
    end
  end
end

-- `#{symbols:path}` (what /symbols inserts): the file's outline from its tree-sitter parser,
-- one line per function, method, class... with its line number.
function capture.symbols(_, arg)
  if not arg then
    return nil, "name the file: #{symbols:path}"
  end
  local path = vim.fn.fnamemodify(require("codecompanion_py.files").expand(arg), ":p")
  -- through the engine's door, as #{file:}: a FIFO or a link to /dev/zero must not hang the editor
  local content, why = require("codecompanion_py.files").read_text(path)
  if not content then
    return nil, why
  end
  local lines = vim.split(content, "\n", { plain = true })
  local filetype = vim.filetype.match({ filename = path, contents = lines }) or ""
  local lang = vim.treesitter.language.get_lang(filetype) or filetype
  local ok, parser = pcall(vim.treesitter.get_string_parser, content, lang)
  if not ok or not parser then
    return nil, ("there is no tree-sitter parser for %s (%s)"):format(arg,
      filetype ~= "" and filetype or "unknown type")
  end
  local out = {}
  local function walk(node, depth)
    for child in node:iter_children() do
      local kind = symbol_kind(child:type())
      local next_depth = depth
      if kind then
        local name_node = child:field("name")[1]
        local name = name_node and vim.treesitter.get_node_text(name_node, content)
          or vim.trim((vim.treesitter.get_node_text(child, content):match("[^\n]*")))
        table.insert(out, ("%s%s %s (line %d)"):format(("  "):rep(depth), kind, name, child:start() + 1))
        next_depth = depth + 1
      end
      walk(child, next_depth)
    end
  end
  walk(parser:parse()[1]:root(), 0)
  return { kind = "symbols", label = ("symbols of %s (%d)"):format(vim.fn.fnamemodify(path, ":."), #out),
    content = #out > 0 and table.concat(out, "\n") or "No symbols found." }
end

-- `#{mcp:server:uri}` (what /mcp attaches): a resource of an MCP server, read by it now.
function capture.mcp(_, arg)
  local server, uri = (arg or ""):match("^([^:]+):(.+)$")
  if not server then
    return nil, "name the server and the resource: #{mcp:server:uri}"
  end
  local ok, text = pcall(require("codecompanion_py.rpc").request, "mcp.resource",
    { server = server, uri = uri, cwd = vim.fn.getcwd() })
  if not ok then
    return nil, tostring(text)
  end
  return { kind = "mcp", label = ("%s resource %s"):format(server, uri), content = text }
end

function capture.buffers()
  local items = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if is_file_buffer(buf) and vim.bo[buf].buflisted then
      table.insert(items, buffer_item(buf, "buffer"))
    end
  end
  return #items > 0 and items or nil, "there are no file buffers to share"
end

function capture.selection(chat)
  local buf = source_buffer(chat)
  if not buf then
    return nil, "there is no file buffer with a selection"
  end
  local first, last = api.nvim_buf_get_mark(buf, "<"), api.nvim_buf_get_mark(buf, ">")
  if first[1] == 0 or last[1] == 0 then
    return nil, ("%s has no selection"):format(relative(buf))
  end
  local lines = api.nvim_buf_get_lines(buf, first[1] - 1, last[1], false)
  return { kind = "selection", label = ("%s lines %d-%d"):format(relative(buf), first[1], last[1]),
    path = api.nvim_buf_get_name(buf), filetype = vim.bo[buf].filetype, content = table.concat(lines, "\n") }
end

function capture.viewport()
  local items = {}
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local buf = api.nvim_win_get_buf(win)
    if is_file_buffer(buf) and api.nvim_win_get_config(win).relative == "" then
      local span = api.nvim_win_call(win, function() return { vim.fn.line("w0"), vim.fn.line("w$") } end)
      local top, bottom = span[1], span[2]
      table.insert(items, {
        kind = "viewport",
        label = ("%s lines %d-%d (visible)"):format(relative(buf), top, bottom),
        path = api.nvim_buf_get_name(buf),
        filetype = vim.bo[buf].filetype,
        content = table.concat(api.nvim_buf_get_lines(buf, top - 1, bottom, false), "\n"),
      })
    end
  end
  return #items > 0 and items or nil, "no window shows a file"
end

local SEVERITY = { "ERROR", "WARN", "INFO", "HINT" }

function capture.diagnostics(chat)
  local buf = source_buffer(chat)
  if not buf then
    return nil, "there is no file buffer with diagnostics"
  end
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local line = (api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1] or ""):gsub("^%s+", "")
    table.insert(out, ("%s:%d:%d %s: %s\n    %s"):format(relative(buf), d.lnum + 1, d.col + 1,
      SEVERITY[d.severity] or "?", (d.message or ""):gsub("\n", " "), line))
  end
  return {
    kind = "diagnostics",
    label = ("diagnostics of %s (%d)"):format(relative(buf), #out),
    content = #out > 0 and table.concat(out, "\n") or "No diagnostics.",
  }
end

function capture.quickfix()
  local out = {}
  for _, entry in ipairs(vim.fn.getqflist()) do
    local name = entry.bufnr > 0 and relative(entry.bufnr) or ""
    table.insert(out, ("%s:%d: %s"):format(name, entry.lnum, vim.trim(entry.text or "")))
  end
  return { kind = "quickfix", label = ("the quickfix list (%s)"):format(words.count(#out, "entry", "entries")),
    content = #out > 0 and table.concat(out, "\n") or "The quickfix list is empty." }
end

function capture.messages()
  local ok, result = pcall(api.nvim_exec2, "messages", { output = true })
  local text = ok and result.output or ""
  return { kind = "messages", label = "Neovim's :messages", content = text ~= "" and text or "No messages." }
end

function capture.diff()
  local ok, result = pcall(function()
    return vim.system({ "git", "diff", "--no-color", "--no-ext-diff" }, { cwd = vim.fn.getcwd(), text = true })
      :wait(5000)
  end)
  if not ok or result.code ~= 0 then
    local why = ok and vim.trim(result.stderr or "") or tostring(result)
    return nil, "git diff failed: " .. (why ~= "" and why or ("exit code " .. tostring(result.code)))
  end
  return { kind = "diff", label = "git diff of " .. vim.fn.fnamemodify(vim.fn.getcwd(), ":~"), filetype = "diff",
    content = result.stdout ~= "" and result.stdout or "No changes." }
end

function capture.terminal()
  local last = vim.iter(api.nvim_list_bufs()):filter(function(buf)
    return api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "terminal" and not vim.b[buf].codecompanion_cli
  end):last()
  if not last then
    return nil, "there is no terminal buffer"
  end
  local lines = api.nvim_buf_get_lines(last, 0, -1, false)
  while #lines > 0 and vim.trim(lines[#lines]) == "" do
    table.remove(lines)
  end
  lines = vim.list_slice(lines, math.max(1, #lines - 199))
  return { kind = "terminal", label = ("terminal %s (last %s)"):format(relative(last), words.count(#lines, "line")),
    content = table.concat(lines, "\n") }
end

-- Pending review comments (code_review.lua); nothing pending: no item, the tag does nothing.
function capture.code_review()
  return require("codecompanion_py.code_review").context_item() or {}
end

M.DESCRIPTIONS = {
  buffer = "The current buffer ({diff}: its changes on later turns, {all}: itself again)",
  buffers = "Every open buffer",
  selection = "The last visual selection",
  viewport = "What the windows show",
  diagnostics = "The current buffer's diagnostics",
  diff = "The git diff of the project",
  quickfix = "The quickfix list",
  messages = "Neovim's :messages",
  terminal = "The last terminal's output",
  file = "A file of the project (#{file:path})",
  image = "An image (#{image:path})",
  fetch = "A web page (#{fetch:url})",
  help = "A section of Vim's help (#{help:tag})",
  symbols = "A file's outline (#{symbols:path})",
  mcp = "A resource of an MCP server (#{mcp:server:uri})",
  code_review = "Your pending code review comments",
}

M.KINDS = vim.tbl_keys(capture)
table.sort(M.KINDS)

-- The user's own `#{name}` entries that have a `callback`: interactions.shared.editor_context
-- (where CodeCompanion 19 reads them), and interactions.chat.editor_context (its docs') over them.
---@return table<string, table>
function M.own()
  local root, found = require("codecompanion_py"), {}
  for _, entries in ipairs({ vim.tbl_get(root.config or {}, "interactions", "shared", "editor_context") or false,
    root.chat_option("variables") or false, root.chat_option("editor_context") or false }) do
    for name, entry in pairs(type(entries) == "table" and entries or {}) do
      found[name] = type(entry) == "table" and entry.callback ~= nil and not capture[name] and entry or found[name]
    end
  end
  return found
end

-- An own entry captured: its callback, or a Lua file that returns one, is given { Chat, config,
-- params } and returns the text.
local function own(name)
  local entry = M.own()[name]
  return entry and function(chat, arg)
    local callback = type(entry.callback) == "string" and assert(loadfile(vim.fn.expand(entry.callback)))()
      or entry.callback
    local text = callback({ Chat = chat, config = vim.tbl_extend("force", entry, { name = name }), params = arg })
    return type(text) == "string" and { kind = name, label = entry.description or ("#{" .. name .. "}"),
      content = text } or nil, "its callback returned no text"
  end
end

-- `item` cut to `limit` characters (max_context_chars), with a line that says so.
---@param item { content?: string, label: string }
---@param limit? integer
---@return table item
function M.cut(item, limit)
  limit = tonumber(limit) or M.DEFAULT_MAX_CHARS
  if type(item.content) == "string" and #item.content > limit then
    local rest = #item.content - limit
    item.content = item.content:sub(1, limit)
      .. ("\n[... cut here: %d more characters were not sent (interactions.chat.opts.max_context_chars)]"):format(rest)
    item.label = item.label .. ", cut"
  end
  return item
end

-- The context `text` names, read now: a list of { kind, label, content, filetype?, path?,
-- bufnr?, param? } (param: a following {diff} or {all}), and what could not be read (one
-- sentence each).
---@param chat CodeCompanionChat
---@param text string the message
---@param max_chars? integer
---@return table[] items
---@return string[] problems
function M.capture(chat, text, max_chars)
  local items, problems, seen = {}, {}, {}
  for name, arg, after in text:gmatch("#{([%w_]+):?([^}]*)}()") do
    local param = text:sub(after):match("^{(%a+)}")
    local key = name .. ":" .. arg
    local fn = capture[name] or own(name)
    if fn and not seen[key] then
      seen[key] = true
      local ok, got, why = pcall(fn, chat, arg ~= "" and arg or nil)
      if not ok then
        got, why = nil, "could not be read: " .. tostring(got)
      end
      if not got then
        table.insert(problems, ("#{%s}: %s"):format(name .. (arg ~= "" and (":" .. arg) or ""), why))
      else
        for _, item in ipairs(got.kind and { got } or got) do -- one item, or a list (maybe empty)
          item.param = (param == "all" or param == "diff") and item.kind == "buffer" and param or nil
          table.insert(items, M.cut(item, max_chars))
        end
      end
    end
  end
  return items, problems
end

return M
