-- Chat actions that go through the engine: regenerate (gr), clear (gx), the debug view
-- (gd), the system prompt toggle (gs) and the settings header (display.chat.show_settings).
-- chat.lua wires the keymaps to these functions and renders the ops in `M.render`; the
-- engine checks each action and answers with ops (or an error that says why not).
local api = vim.api
local rpc = require("codecompanion_py.rpc")

local M = {}

local ns = api.nvim_create_namespace("codecompanion_py") -- chat.lua's marks (hint, tokens, blocks)
-- The turns' headers follow `interactions.chat.roles` (chat.lua): the user's is one line,
-- any other `## ` line heads a reply.
local function user_header()
  return require("codecompanion_py.chat").user_header()
end

local function is_reply_header(line)
  return line:sub(1, 3) == "## " and line ~= user_header()
end
local FENCE = "---"

---@type table<string, fun(chat: table, op: table)> renderers of the ops these actions use
M.render = {}

local function show_settings()
  local display = require("codecompanion_py").config.display or {}
  return (display.chat or {}).show_settings == true
end

-- The chat of `buf` when it is open and idle; otherwise says why not and returns nil.
local function idle_chat(buf, what)
  local chat = require("codecompanion_py.chat").chats[buf]
  if not chat then
    vim.notify("CodeCompanion: this buffer is not a chat", vim.log.levels.WARN)
  elseif chat.status == "streaming" then
    vim.notify(("CodeCompanion: wait for the reply to finish (or press q) to %s"):format(what), vim.log.levels.WARN)
  else
    return chat
  end
end

local function set_lines(chat, first, last, lines)
  local buf = chat.bufnr
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = chat.status ~= "streaming"
  chat.end_pos = nil -- the end may have moved: chat.lua finds it afresh
end

local function delete_marks_from(buf, row)
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, -1, {})) do
    api.nvim_buf_del_extmark(buf, ns, mark[1])
  end
end

local function lines_of(buf)
  return api.nvim_buf_get_lines(buf, 0, -1, false)
end

local function go_to_end(buf)
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    api.nvim_win_set_cursor(win, { last, 0 })
  end
end

-- --- gs, gx, gr, gd -----------------------------------------------------------------------

---@param buf integer
function M.toggle_system_prompt(buf)
  if idle_chat(buf, "toggle the system prompt") then
    rpc.notify("chat.system_prompt", { chat_id = buf })
  end
end

---@param buf integer
function M.clear(buf)
  if idle_chat(buf, "clear the chat") then
    rpc.notify("chat.clear", { chat_id = buf })
  end
end

---@param buf integer
function M.regenerate(buf)
  if idle_chat(buf, "regenerate") then
    rpc.notify("chat.regenerate", { chat_id = buf })
  end
end

---@param buf integer
function M.debug(buf)
  if require("codecompanion_py.chat").chats[buf] then
    rpc.notify("chat.debug", { chat_id = buf })
  end
end

-- The conversation is gone: everything below the first `## Me` goes, and what is above
-- it (the settings header) and on it (the hint) stays.
function M.render.cleared(chat)
  local buf = chat.bufnr
  local first = 0
  for i, line in ipairs(lines_of(buf)) do
    if line == user_header() then
      first = i
      break
    end
  end
  delete_marks_from(buf, first) -- token counts, agent tool blocks (the hint is on row first - 1)
  chat.blocks, chat.block = {}, nil
  chat.shared, chat.shared_pending = {}, nil -- the engine forgot what the context sent too
  if first == 0 then
    set_lines(chat, 0, -1, { user_header(), "", "" })
  else
    set_lines(chat, first, -1, { "", "" })
  end
  go_to_end(buf)
end

-- The last reply leaves the buffer (from its header to the end); what the user had typed
-- since comes back below the next `## Me`, once the new reply is done.
function M.render.rewind(chat)
  local buf = chat.bufnr
  local lines = lines_of(buf)
  local header, me
  for i = #lines, 1, -1 do
    if not me and lines[i] == user_header() then
      me = i
    end
    if is_reply_header(lines[i]) then
      header = i
      break
    end
  end
  if not header then
    return
  end
  local draft = me and me > header and vim.list_slice(lines, me + 1) or {}
  while #draft > 0 and vim.trim(draft[#draft]) == "" do
    table.remove(draft)
  end
  while #draft > 0 and vim.trim(draft[1]) == "" do
    table.remove(draft, 1)
  end
  local cut = header - 1 -- 0-based row of the header
  while cut > 0 and lines[cut] == "" do
    cut = cut - 1
  end
  delete_marks_from(buf, cut)
  chat.status = "streaming"
  chat.turn_started = false
  chat.blocks, chat.block = {}, nil
  set_lines(chat, cut, -1, {})
  if #draft > 0 then
    api.nvim_create_autocmd("User", {
      pattern = { "CodeCompanionChatDone", "CodeCompanionChatStopped" },
      callback = function(args)
        if (args.data or {}).bufnr ~= buf then
          return false
        end
        if api.nvim_buf_is_valid(buf) then
          api.nvim_buf_set_lines(buf, -2, -1, false, draft)
        end
        return true -- once
      end,
    })
  end
  local data = { bufnr = buf, id = buf }
  api.nvim_exec_autocmds("User", { pattern = "CodeCompanionChatSubmitted", modeline = false, data = data })
end

-- A read-only float with what the engine holds for the chat; q closes it.
function M.render.debug(chat, op)
  local float = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(float, 0, -1, false, vim.split(op.text, "\n", { plain = true }))
  vim.bo[float].filetype = "markdown"
  vim.bo[float].modifiable = false
  vim.bo[float].bufhidden = "wipe"
  local width = math.max(20, math.floor(vim.o.columns * 0.8))
  local height = math.max(5, math.floor(vim.o.lines * 0.8))
  local win = api.nvim_open_win(float, true, {
    relative = "editor", width = width, height = height, border = "rounded",
    row = math.floor((vim.o.lines - height) / 2), col = math.floor((vim.o.columns - width) / 2),
    title = (" Debug: chat %d "):format(chat.bufnr), title_pos = "center",
  })
  vim.wo[win].wrap = true
  vim.keymap.set("n", "q", function()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end, { buffer = float, nowait = true, desc = "close" })
end

-- --- the settings header ------------------------------------------------------------------

-- The rows (0-based, end exclusive) of the header at the top of `lines`, with the blank
-- line after it; nil when the buffer has none.
local function header_rows(lines)
  if lines[1] ~= FENCE then
    return nil
  end
  for i = 2, #lines do
    if lines[i] == FENCE then
      return 0, (lines[i + 1] == "" and i + 1 or i), i
    end
  end
end

local function yaml_value(value)
  if value == nil or value == vim.NIL then
    return "null"
  elseif type(value) == "string" then
    return vim.json.encode(value)
  end
  return tostring(value)
end

function M.render.settings(chat, op)
  local buf = chat.bufnr
  if not show_settings() or not api.nvim_buf_is_valid(buf) then
    return
  end
  local first, last = header_rows(lines_of(buf))
  local header = {}
  if #op.entries > 0 then
    header = { FENCE }
    for _, entry in ipairs(op.entries) do
      table.insert(header, ("%s: %s"):format(entry.key, yaml_value(entry.value)))
    end
    vim.list_extend(header, { FENCE, "" })
  end
  set_lines(chat, first or 0, last or 0, header)
end

local function scalar(text)
  if text == "" or text == "null" or text == "~" then
    return vim.NIL
  elseif text == "true" or text == "false" then
    return text == "true"
  elseif text:match('^".*"$') then
    local ok, value = pcall(vim.json.decode, text)
    return ok and value or text:sub(2, -2)
  elseif text:match("^'.*'$") then
    return text:sub(2, -2):gsub("''", "'")
  end
  return tonumber(text) or text
end

-- The settings the user edited in the chat's header (`key: value` per line), or nil when
-- there is no header. Lines that are not `key: value` go to the engine under `_unparsed`,
-- which refuses them by name.
---@param buf integer
---@return table|nil
function M.read_settings(buf)
  if not show_settings() then
    return nil
  end
  -- the header is at the top and short: a long chat is not read whole at every submit
  local lines = api.nvim_buf_get_lines(buf, 0, 200, false)
  local _, _, closing = header_rows(lines)
  if not closing and #lines == 200 then
    lines = lines_of(buf)
    _, _, closing = header_rows(lines)
  end
  if not closing then
    return nil
  end
  local settings = {}
  for i = 2, closing - 1 do
    local line = lines[i]
    if vim.trim(line) ~= "" and not line:match("^%s*#") then
      local key, value = line:match("^([%w_%.%-]+):%s*(.-)%s*$")
      if key then
        settings[key] = scalar(value)
      else
        settings._unparsed = settings._unparsed or {}
        table.insert(settings._unparsed, line)
      end
    end
  end
  return settings
end

return M
