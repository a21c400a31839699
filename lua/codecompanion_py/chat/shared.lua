-- What a chat has been shown: every piece of context shared with it (#{buffer}, #{selection},
-- /file, /image, rules...), listed as CodeCompanion lists it, in a block at the top of the
-- user's message:
--
--   > Context:
--   > - <buf>lua/calc.lua</buf> (diff)
--   > - <rules>AGENTS.md</rules>
--
-- Deleting a line from the block drops that item: what it sent leaves later requests. A
-- shared buffer is followed: when it changed since it was last sent, the next message sends
-- only what changed ({diff}, the default, `interactions.shared.editor_context.buffer.opts.
-- default_params`) or the whole buffer again ({all}); `gbd` / `gba` on its line switch it.
local api = vim.api
local capture = require("codecompanion_py.chat.context")

local M = {}

M.HEADING = "> Context:"
local TAGS = { buffer = "buf", file = "file", image = "image", rules = "rules" }

local function config()
  return require("codecompanion_py").config or {}
end

-- `#{buffer}` without {diff} or {all}: CodeCompanion's default_params.
local function default_sync()
  for _, key in ipairs({ "interactions", "strategies" }) do
    local section = config()[key]
    local value = vim.tbl_get(type(section) == "table" and section or {}, "shared", "editor_context", "buffer", "opts",
      "default_params")
    if value == "all" or value == "diff" then
      return value
    end
  end
  return "diff"
end

---@param item table
---@return string
function M.id(item)
  local tag = TAGS[item.kind] or item.kind
  local name = item.path and vim.fn.fnamemodify(item.path, ":.") or item.label
  return ("<%s>%s</%s>"):format(tag, name, tag)
end

local function items(chat)
  chat.shared = chat.shared or {}
  return chat.shared
end

-- The block's lines (none when nothing was shared).
---@param chat CodeCompanionChat
---@return string[]
function M.block_lines(chat)
  if #items(chat) == 0 then
    return {}
  end
  local lines = { M.HEADING }
  for _, item in ipairs(items(chat)) do
    table.insert(lines, "> - " .. item.id .. (item.sync and (" (" .. item.sync .. ")") or ""))
  end
  return lines
end

-- The message without its context block, and the ids the block still lists (nil: no block).
---@param text string
---@return string message
---@return table<string, true>|nil listed ids
function M.split(text)
  local lines = vim.split(text, "\n", { plain = true })
  local first = 1
  while lines[first] and vim.trim(lines[first]) == "" do
    first = first + 1
  end
  if lines[first] ~= M.HEADING then
    return text, nil
  end
  local listed, last = {}, first
  while lines[last + 1] and lines[last + 1]:sub(1, 1) == ">" do
    last = last + 1
    local id = lines[last]:match("(<(%w+)>.-</%2>)")
    if id then
      listed[id] = true
    end
  end
  return vim.trim(table.concat(vim.list_slice(lines, last + 1), "\n")), listed
end

-- The items the user deleted from the block (all of them when the block is gone).
---@param chat CodeCompanionChat
---@param listed table<string, true>|nil
---@return string[] ids
function M.removed(chat, listed)
  local gone = {}
  for _, item in ipairs(items(chat)) do
    if not (listed and listed[item.id]) then
      table.insert(gone, item.id)
    end
  end
  return gone
end

local function find(chat, id)
  for index, item in ipairs(items(chat)) do
    if item.id == id then
      return item, index
    end
  end
end

-- Followed buffers that changed since they were last sent: what goes again.
local function updates(chat, skip)
  local out = {}
  for _, item in ipairs(items(chat)) do
    local buf = item.bufnr
    if item.sync and not skip[item.id] and buf and api.nvim_buf_is_valid(buf)
        and api.nvim_buf_get_changedtick(buf) ~= item.tick then
      local now = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      if now ~= item.sent then
        local update = { id = item.id, kind = item.kind, path = item.path, filetype = item.filetype,
          update = item.sync, label = item.label, bufnr = buf, tick = api.nvim_buf_get_changedtick(buf), sent = now }
        if item.sync == "diff" then
          update.content = vim.diff(item.sent .. "\n", now .. "\n", { result_type = "unified", ctxlen = 3 })
        else
          update.content = now
        end
        table.insert(out, update)
      end
    end
  end
  return out
end

-- What goes with a message: the context it names (read now) and the followed buffers that
-- changed. Returns the items to send and the problems (one sentence each).
---@param chat CodeCompanionChat
---@param text string
---@param max_chars? integer
---@param removed string[]
---@return table[] items
---@return string[] problems
function M.collect(chat, text, max_chars, removed)
  local skip = {}
  for _, id in ipairs(removed or {}) do
    skip[id] = true
  end
  local fresh, problems = capture.capture(chat, text, max_chars)
  local named = {}
  for _, item in ipairs(fresh) do
    item.id = M.id(item)
    named[item.id] = true
    if item.kind == "buffer" then
      item.sync = item.param or default_sync()
      if item.bufnr then -- the whole text, even when what goes now is cut
        item.sent = table.concat(api.nvim_buf_get_lines(item.bufnr, 0, -1, false), "\n")
        item.tick = api.nvim_buf_get_changedtick(item.bufnr)
      end
    end
    if find(chat, item.id) and not skip[item.id] then
      item.update = "all" -- named again: it goes afresh, in place of what it sent
    end
  end
  for id in pairs(skip) do
    named[id] = true
  end
  local out = {}
  for _, item in ipairs(chat.shared_pending or {}) do
    if not skip[item.id] then
      table.insert(out, item)
    end
  end
  vim.list_extend(out, updates(chat, named))
  for _, item in ipairs(out) do
    capture.cut(item, max_chars)
  end
  return vim.list_extend(out, fresh), problems
end

-- The message went: the list now has what it sent and lacks what the user removed.
---@param chat CodeCompanionChat
---@param sent table[]
---@param removed string[]
function M.commit(chat, sent, removed)
  chat.shared_pending = nil
  M.remove(chat, removed)
  for _, item in ipairs(sent) do
    local known = find(chat, item.id)
    if known then
      known.sent, known.tick = item.sent or known.sent, item.tick or known.tick
      known.sync = item.sync or known.sync
    else
      table.insert(items(chat), { id = item.id, kind = item.kind, label = item.label, path = item.path,
        filetype = item.filetype, bufnr = item.bufnr, sync = item.sync, sent = item.sent, tick = item.tick })
    end
  end
end

---@param chat CodeCompanionChat
---@param ids string[]
function M.remove(chat, ids)
  local gone = {}
  for _, id in ipairs(ids or {}) do
    gone[id] = true
  end
  chat.shared = vim.tbl_filter(function(item) return not gone[item.id] end, items(chat))
end

-- Items that go with the next message without being named in it (rules, loaded when the
-- chat opens); listed at once.
---@param chat CodeCompanionChat
---@param list table[]
function M.add_pending(chat, list)
  chat.shared_pending = chat.shared_pending or {}
  for _, item in ipairs(list) do
    item.id = item.id or M.id(item)
    if not find(chat, item.id) then
      table.insert(chat.shared_pending, item)
      table.insert(items(chat), { id = item.id, kind = item.kind, label = item.label, path = item.path })
    end
  end
end

-- Items known without being sent by this editor (a reopened chat's, from its saved history).
---@param chat CodeCompanionChat
---@param saved? table[]
function M.restore(chat, saved)
  for _, entry in ipairs(saved or {}) do
    if not find(chat, entry.id) then
      table.insert(items(chat), { id = entry.id, label = entry.label })
    end
  end
end

-- The payload's form of an item (the engine needs no buffer numbers or snapshots).
---@param item table
---@return table
function M.wire(item)
  return { id = item.id, kind = item.kind, label = item.label, content = item.content, filetype = item.filetype,
    path = item.path, update = item.update, system_prompt = item.system_prompt }
end

-- `gba` / `gbd` on a buffer's line of the block: follow it whole, or by its changes (again: stop).
---@param chat CodeCompanionChat
---@param mode "all"|"diff"
function M.toggle_sync(chat, mode)
  local line = api.nvim_get_current_line()
  local id = line:match("(<buf>.-</buf>)")
  local item = id and find(chat, id)
  if not item then
    return vim.notify("CodeCompanion: put the cursor on a buffer in the Context block", vim.log.levels.WARN)
  end
  item.sync = item.sync ~= mode and mode or nil
  local text = "> - " .. item.id .. (item.sync and (" (" .. item.sync .. ")") or "")
  local row = api.nvim_win_get_cursor(0)[1]
  if vim.bo[chat.bufnr].modifiable then
    api.nvim_buf_set_lines(chat.bufnr, row - 1, row, false, { text })
  end
  vim.notify(("CodeCompanion: %s %s"):format(item.id,
    item.sync == "all" and "is sent whole when it changes" or item.sync == "diff" and "sends its changes"
    or "is no longer followed"))
end

return M
