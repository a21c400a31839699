-- What the engine asks of the editor while a chat runs tools. Each request arrives as a
-- `call` op {id, method, args}; the answer goes back as one `editor.reply` notification,
-- possibly much later (an approval waits for the user). The methods are listed once more in
-- Python (codecompanion_py/ui/editor.py's EditorMethod; tests/test_calls.py keeps them equal):
--   acp.session_pre  `User CodeCompanionACPSessionPre` before an agent's session starts
--   approve        vim.ui.select: Accept / Always accept / Reject (with a reason) / Cancel,
--                  or the options an ACP agent offers, then Cancel
--   tool.invoke    call a function of a Lua-defined tool (see tools.lua)
--   tool.release   forget finished runs of Lua-defined tools
--   buffer.get     the loaded buffer of a file: lines, modified flag, changedtick
--   buffer.reload  re-read loaded buffers of files an agent changed on disk
--   buffer.set     replace a buffer's lines as one undo step, then save if it was clean
--   review         show a written edit for the user to keep or reject
--   diagnostics    vim.diagnostic entries of a file
--   lua.call       call a function of the setup() table (functions.lua): an api_key
--                  function, a handler, a schema default, the system prompt...
--   tool.output    the chat's `on_tool_output` callbacks, given { tool, for_llm, for_user } to change

---@class codecompanion_py.CallOp the `call` op: a question from the engine
---@field id integer what the answer carries back
---@field method string one of the methods above, dotted ("buffer.get")
---@field args? table the method's arguments

---@alias codecompanion_py.Reply fun(answer: any) answers the call (once)
---@alias codecompanion_py.EditorMethod fun(chat: table?, args: table, reply: codecompanion_py.Reply)

local api = vim.api
local rpc = require("codecompanion_py.rpc")

local M = {}
---@type table<string, codecompanion_py.EditorMethod> by name, dots as underscores
local methods = {}

local function send(id, answer)
  local ok, err = pcall(rpc.notify_raw, "editor.reply", { id = id, result = answer })
  if not ok then -- e.g. a tool returned a function: say so instead of leaving the engine waiting
    rpc.notify_raw("editor.reply", { id = id, error = "the answer could not be sent to the engine: " .. tostring(err) })
  end
end

local function fail(id, message)
  rpc.notify_raw("editor.reply", { id = id, error = message })
end

local unknown_reported = {}

--- Answers the call op `op` of `chat` (nil for none). A method it does not know is an error
--- to the engine, and said once to the user, as an unknown UI op is (chat.lua).
---@param chat table?
---@param op codecompanion_py.CallOp
---@return nil
function M.handle(chat, op)
  local method = methods[op.method]
  if not method then
    if not unknown_reported[tostring(op.method)] then
      unknown_reported[tostring(op.method)] = true
      vim.notify(("CodeCompanion: the engine asked the editor for an unknown method %q; the Lua and Python parts "
        .. "of the plugin do not match (update both)"):format(tostring(op.method)), vim.log.levels.ERROR)
    end
    return fail(op.id, "unknown editor method " .. tostring(op.method))
  end
  local ok, err = pcall(method, chat, op.args or {}, function(answer)
    send(op.id, answer == nil and vim.NIL or answer)
  end)
  if not ok then
    fail(op.id, tostring(err))
  end
end

local LABELS = { accept = "Accept", reject = "Reject", cancel = "Cancel" }

-- The choices of an approval: the orchestrator's fixed set, or the options an ACP agent
-- offers ({label, choice} each); Cancel is always last.
local function approval_choices(args)
  local labels, choices = {}, {}
  if type(args.options) == "table" and #args.options > 0 then
    for _, option in ipairs(args.options) do
      table.insert(labels, option.label)
      table.insert(choices, option.choice)
    end
  else
    labels, choices = { LABELS.accept }, { "accept" }
    if type(args.always) == "string" then
      table.insert(labels, args.always)
      table.insert(choices, "always")
    end
    table.insert(labels, LABELS.reject)
    table.insert(choices, "reject")
  end
  table.insert(labels, LABELS.cancel)
  table.insert(choices, "cancel")
  return labels, choices
end

-- Before an agent's session starts: `User CodeCompanionACPSessionPre`. Its `data` is a copy
-- (Neovim copies event data), so a handler that changes the MCP servers the agent gets does so
-- in `require("codecompanion").session_pre.mcp_servers`; the reply carries them back.
function methods.acp_session_pre(chat, args, reply)
  local data = vim.deepcopy(args)
  data.bufnr = chat and chat.bufnr or nil
  if data.mcp_servers == vim.NIL then
    data.mcp_servers = {}
  end
  local api_module = require("codecompanion_py.api")
  api_module.session_pre = data
  pcall(api.nvim_exec_autocmds, "User", { pattern = "CodeCompanionACPSessionPre", modeline = false, data = data })
  api_module.session_pre = nil
  reply({ mcp_servers = data.mcp_servers })
end

function methods.approve(chat, args, reply)
  if type(args.detail) == "string" and args.detail ~= "" then
    require("codecompanion_py.chat").show(chat, args.detail, nil, { fold = false })
    vim.cmd("redraw") -- the diff on screen before the question takes the command line
  end
  if args.input then -- a typed answer (ask_questions)
    return vim.ui.input({ prompt = args.prompt }, function(text)
      reply({ choice = text and "answer" or "cancel", text = text })
    end)
  end
  local labels, choices = approval_choices(args)
  local prompt = args.prompt
  if type(args.must_ask) == "string" then
    prompt = ("%s (always asked: %s)"):format(prompt, args.must_ask)
  end
  vim.ui.select(labels, { prompt = prompt, kind = "codecompanion_py.approval" }, function(_, index)
    local choice = index and choices[index] or "cancel"
    if choice ~= "reject" or (type(args.options) == "table" and #args.options > 0) then -- agent options: no reason
      return reply({ choice = choice })
    end
    vim.ui.input({ prompt = "Reason for rejecting (sent to the LLM): " }, function(reason)
      reply({ choice = "reject", reason = reason })
    end)
  end)
end

function methods.tool_invoke(chat, args, reply)
  require("codecompanion_py.tools").invoke(chat.bufnr, args, reply)
end

function methods.tool_release(_, args, reply)
  require("codecompanion_py.tools").release(args.run_ids)
  reply(true)
end

local function real(path)
  return vim.uv.fs_realpath(path) or vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
end

local function find_buffer(path)
  local target = real(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = api.nvim_buf_get_name(buf)
      if name ~= "" and real(name) == target then
        return buf
      end
    end
  end
end

M.find_buffer = find_buffer -- a file's loaded buffer, by its real path

function methods.buffer_get(_, args, reply)
  local buf = find_buffer(args.path)
  if not buf then
    return reply(vim.NIL)
  end
  reply({
    bufnr = buf,
    lines = api.nvim_buf_get_lines(buf, 0, -1, false),
    modified = vim.bo[buf].modified,
    changedtick = api.nvim_buf_get_changedtick(buf),
    eol = vim.bo[buf].eol,
  })
end

-- Write the buffer with its own 'bomb', 'eol' and 'fileformat', 'fixeol' aside: a file without
-- a final newline keeps it so. `exact`: without the user's write autocmds too (a formatter),
-- for a review's restore, which must write back the bytes that were there. True if written.
local function save(buf, exact)
  return pcall(api.nvim_buf_call, buf, function()
    local fixeol = vim.bo.fixeol
    vim.bo.fixeol = false
    local ok, err = pcall(vim.cmd, (exact and "noautocmd " or "") .. "silent write")
    vim.bo.fixeol = fixeol
    assert(ok, err)
  end)
end

-- How Neovim holds a file's exact text `raw` in a buffer whose 'fileformat' is `fileformat`:
-- its lines, 'bomb', 'eol' and 'fileformat' ("dos" only when every line ends in CRLF; in a
-- file that mixes CRLF and LF the CR stays in its lines, as Neovim reads such a file).
local function shape_of(raw, fileformat)
  local bomb = raw:sub(1, 3) == "\239\187\191"
  raw = bomb and raw:sub(4) or raw
  local eol = raw:sub(-1) == "\n"
  local lines = vim.split(raw, "\n", { plain = true })
  if eol then
    table.remove(lines)
  end
  local ended = eol and #lines or #lines - 1 -- lines followed by a line feed
  local dos = fileformat == "dos" and ended > 0
  for i = 1, ended do
    dos = dos and lines[i]:sub(-1) == "\r"
  end
  for i = 1, dos and ended or 0 do
    lines[i] = lines[i]:sub(1, -2)
  end
  return { lines = lines, bomb = bomb, eol = eol, fileformat = dos and "dos" or "unix", fileencoding = "utf-8" }
end

-- Replace only the lines that differ, in one nvim_buf_set_lines call: one undo step,
-- and marks and folds outside the change stay where they were.
function methods.buffer_set(_, args, reply)
  local buf = args.bufnr
  if not api.nvim_buf_is_valid(buf) then
    error("the buffer was closed")
  end
  if api.nvim_buf_get_changedtick(buf) ~= args.changedtick then
    error("the buffer changed while the edit was being prepared; read the file again")
  end
  if require("codecompanion_py.diff").busy(buf) or require("codecompanion_py.inline").writing(buf) then
    error("another change to this file is under way in the editor (the user is reviewing it, or the inline "
      .. "assistant writes it), so nothing was written; "
      .. "read the file again once they have settled it")
  end
  local old, new = api.nvim_buf_get_lines(buf, 0, -1, false), args.lines
  local first = 1
  while first <= #old and first <= #new and old[first] == new[first] do
    first = first + 1
  end
  local old_last, new_last = #old, #new
  while old_last >= first and new_last >= first and old[old_last] == new[new_last] do
    old_last, new_last = old_last - 1, new_last - 1
  end
  local was_modified = vim.bo[buf].modified
  api.nvim_buf_set_lines(buf, first - 1, old_last, false, vim.list_slice(new, first, new_last))
  local saved = false
  if args.save and not was_modified then
    saved = save(buf)
  end
  reply({ saved = saved, modified = vim.bo[buf].modified })
end

local function read_file(path)
  local file = io.open(path, "rb")
  if not file then
    return nil
  end
  local data = file:read("*a")
  file:close()
  return data
end

-- The bytes a buffer of this shape is written as, or nil (an encoding iconv cannot write,
-- or the byte order mark of one other than UTF-8).
local function bytes_of(shape)
  local newline = ({ dos = "\r\n", mac = "\r" })[shape.fileformat] or "\n"
  local text = table.concat(shape.lines, newline) .. ((shape.eol and #shape.lines > 0) and newline or "")
  local encoding = shape.fileencoding or ""
  if encoding == "" or encoding == "utf-8" then
    return (shape.bomb and "\239\187\191" or "") .. text
  end
  return not shape.bomb and vim.iconv(text, "utf-8", encoding) or nil
end

-- Put `bytes` in the file at `path` if it still holds `expected` (what the edit wrote, not a
-- later change): a temporary file beside it, then renamed over it. Nil, or why not.
local function put_file(path, bytes, expected)
  if read_file(path) ~= expected then
    return "it changed on disk during the review, so it was left as it is"
  end
  local uv, stat = vim.uv, vim.uv.fs_stat(path)
  local tmp = ("%s.codecompanion-%d"):format(path, uv.getpid())
  local fd = uv.fs_open(tmp, "wx", stat and stat.mode % 4096 or 420)
  local ok = fd and uv.fs_write(fd, bytes) == #bytes and uv.fs_fsync(fd)
  if fd then
    uv.fs_close(fd)
  end
  if not (ok and uv.fs_rename(tmp, path)) then
    uv.fs_unlink(tmp)
    return "it could not be written"
  end
end

-- Write back what the review rejected of an edit that was saved on disk: the buffer with the
-- file's shape (its exact bytes), or, when the buffer was closed or now has another name, the
-- bytes straight to the file. Nil, or why not.
local function write_back(buf, path, shape, written, counts)
  local gone = counts.gone
  if not gone and real(api.nvim_buf_get_name(buf)) == real(path) then
    if read_file(path) ~= written then
      return "it changed on disk during the review, so it was left as it is"
    end
    vim.bo[buf].bomb, vim.bo[buf].eol, vim.bo[buf].fileformat = shape.bomb, shape.eol, shape.fileformat
    return not save(buf, true) and "it could not be written" or nil
  end
  local lines = gone and counts.base or api.nvim_buf_get_lines(buf, 0, -1, false)
  local bytes = bytes_of(vim.tbl_extend("force", shape, { lines = lines }))
  if not bytes then
    return ("its encoding (%s) cannot be written back here"):format(shape.fileencoding)
  end
  return put_file(path, bytes, written)
end

-- What the file was before the edit, as its buffer holds it: the file's exact text when the
-- edit was written on disk, else the buffer's lines and options.
local function shape_before(buf, args)
  if type(args.original) == "string" then
    return shape_of(args.original, vim.bo[buf].fileformat)
  end
  local before = vim.split(args.before or "", "\n", { plain = true })
  if before[#before] == "" then
    table.remove(before)
  end
  local options = vim.bo[buf]
  return { lines = before, bomb = options.bomb, eol = options.eol, fileformat = options.fileformat,
    fileencoding = options.fileencoding }
end

local function show(buf)
  if #vim.fn.win_findbuf(buf) == 0 then -- shown in a code window of this tab, or a new split
    local target
    for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
      if vim.bo[api.nvim_win_get_buf(win)].filetype ~= "codecompanion" and api.nvim_win_get_config(win).relative == ""
      then
        target = win
        break
      end
    end
    if not target then
      vim.cmd("topleft split")
      target = api.nvim_get_current_win()
    end
    api.nvim_win_set_buf(target, buf)
  end
end

-- An edit the LLM wrote, reviewed in its buffer (diff.lua: accept, reject, hunk by hunk).
-- The buffer is loaded and shown if it is not; what the user rejects is written back to
-- disk, byte for byte, unless the buffer held unsaved changes of theirs. Closing the buffer
-- rejects the edit. A review already pending on the buffer is settled first. The reply:
-- { result, text }.
function methods.review(_, args, reply)
  local diff = require("codecompanion_py.diff")
  diff.when_free(find_buffer(args.path) or -1, function()
    local buf = find_buffer(args.path)
    if not buf then
      buf = vim.fn.bufadd(args.path)
      vim.fn.bufload(buf)
      vim.bo[buf].buflisted = true
    end
    show(buf)
    local shape, modified = shape_before(buf, args), vim.bo[buf].modified
    local written = not modified and read_file(args.path) or nil -- the edit is on disk
    diff.start(buf, {
      start = 0,
      count = api.nvim_buf_line_count(buf),
      original = shape.lines,
      modified = modified,
      on_done = function(result, counts)
        local name = args.relative or vim.fn.fnamemodify(args.path, ":~:.")
        local why = written and (result == "rejected" or result == "partial")
          and write_back(buf, args.path, shape, written, counts)
        if why then
          vim.notify(("CodeCompanion: %s was not put back as it was: %s"):format(name, why), vim.log.levels.WARN)
        elseif counts.gone then
          local what = counts.accepted > 0 and "the hunks not accepted are rejected" or "the edit is rejected"
          vim.notify(("CodeCompanion: %s was closed during its review: %s%s"):format(name, what,
            written and ", on disk too" or ""), vim.log.levels.WARN)
        end
        local lines = counts.gone and counts.base or api.nvim_buf_get_lines(buf, 0, -1, false)
        reply({ result = result, text = table.concat(lines, "\n") .. "\n" })
      end,
    })
  end)
end

-- An agent changed files on disk itself: loaded buffers without unsaved changes take the
-- new text (`checktime` asks the user about modified ones, as for any outside change).
function methods.buffer_reload(_, args, reply)
  local reloaded = {}
  for _, path in ipairs(args.paths or {}) do
    local buf = find_buffer(path)
    if buf then
      api.nvim_buf_call(buf, function()
        vim.cmd("checktime")
      end)
      table.insert(reloaded, path)
    end
  end
  reply({ reloaded = reloaded })
end

function methods.diagnostics(_, args, reply)
  local buf = find_buffer(args.path)
  if not buf then
    return reply({ loaded = false, items = {} })
  end
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(items, {
      line = d.lnum + 1,
      col = d.col + 1,
      severity = vim.diagnostic.severity[d.severity] or tostring(d.severity),
      message = d.message,
      source = d.source,
      code = (api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1] or ""),
    })
  end
  reply({ loaded = true, items = items })
end

function methods.rewind_conflicts(_, args, reply)
  require("codecompanion_py.chat.rewind").ask_conflicts(args, reply)
end

function methods.lua_call(_, args, reply)
  reply(require("codecompanion_py.functions").call(args))
end

function methods.tool_output(chat, args, reply)
  local data = { tool = args.tool, for_llm = args.for_llm, for_user = args.for_user }
  if chat then
    require("codecompanion_py.chat.config").run_callbacks(chat, "on_tool_output", data)
  end
  reply({ for_llm = tostring(data.for_llm or ""), for_user = data.for_user ~= nil and tostring(data.for_user) or nil })
end

-- "tool.invoke" arrives as a dotted name; the table keys use underscores.
setmetatable(methods, {
  __index = function(t, key)
    return rawget(t, (key:gsub("%.", "_")))
  end,
})

return M
