-- Edit predictions while typing (`interactions.completion`): after a pause the text around the
-- cursor goes to the engine (completion_calls.py), which answers with one `suggestions` op; the
-- first candidate is drawn as ghost text at the cursor. Typing what it shows consumes it, any
-- other key dismisses it and stops the request in flight. Accepting inserts the text as text
-- (never as keys) in an undo step of its own. The blink.cmp and nvim-cmp sources beside this
-- file ask through `fetch`.
local api, uv = vim.api, vim.uv
local rpc = require("codecompanion_py.rpc")

local M = {}

M.op_names = { "suggestions" }
local ns = api.nvim_create_namespace("codecompanion_py_completion")
local HL = "CodeCompanionGhostText"
local RECENT = 3 -- other buffers whose last change goes along
local state = { enabled = false, seq = 0, waiters = {}, recent = {}, maps = {} }

local function opts()
  return require("codecompanion_py.options").get("interactions.completion") or {}
end

local function fire(event, data)
  api.nvim_exec_autocmds("User", { pattern = "CodeCompanion" .. event, modeline = false, data = data })
end

-- Whether a completion menu is open (the built-in one, blink.cmp's, nvim-cmp's).
local function menu_open()
  if vim.fn.pumvisible() == 1 then return true end
  local blink, cmp = package.loaded["blink.cmp"], package.loaded["cmp"]
  return (blink and blink.is_menu_visible and blink.is_menu_visible())
    or (cmp and cmp.visible and cmp.visible()) or false
end

-- Whether predictions are wanted in `buf`: on, a file's buffer, its filetype not turned off
-- (`filetypes = { lua = false, ["*"] = true }`, as copilot.lua's; a value may be a function of
-- the buffer).
---@param buf integer
---@return boolean
function M.wanted(buf)
  if not state.enabled or vim.bo[buf].buftype ~= "" then return false end
  local filetypes, ft = opts().filetypes or {}, vim.bo[buf].filetype
  local value = filetypes[ft]
  if value == nil then value = filetypes["*"] ~= false end
  if type(value) == "function" then value = value(buf) end
  return value == true
end

-- Other buffers edited lately, the lines around their last change.
local function recent_snippets(current)
  local out = {}
  for _, entry in ipairs(state.recent) do
    if entry.buf ~= current and api.nvim_buf_is_loaded(entry.buf) and #out < RECENT then
      local lines = api.nvim_buf_get_lines(entry.buf, math.max(entry.row - 15, 0), entry.row + 15, false)
      table.insert(out, { path = vim.fn.fnamemodify(api.nvim_buf_get_name(entry.buf), ":."),
        text = table.concat(lines, "\n") })
    end
  end
  return out
end

local function remember_edit(buf, row)
  for i, entry in ipairs(state.recent) do
    if entry.buf == buf then table.remove(state.recent, i) break end
  end
  table.insert(state.recent, 1, { buf = buf, row = row })
  state.recent[RECENT + 2] = nil
end

-- `text` cut to `room` bytes at its end (`from_end`) or its start, on a character's edge.
local function cut(text, room, from_end)
  if #text <= room then return text end
  if from_end then
    local i = #text - room + 1
    return text:sub(i + (vim.str_utf_start(text, i) < 0 and vim.str_utf_end(text, i) + 1 or 0))
  end
  return text:sub(1, room + (vim.str_utf_end(text, room) > 0 and vim.str_utf_start(text, room) - 1 or 0))
end

-- Lines from `row` (0-based) on by `step` (-1 up, 1 down), up to `count` of them and `room`
-- bytes in all: a file of long lines sends its budget, not a thousand whole lines.
local function gather(buf, row, step, count, room, out)
  while room > 0 and count > 0 and row >= 0 and row < api.nvim_buf_line_count(buf) do
    local line = cut(api.nvim_buf_get_lines(buf, row, row + 1, false)[1], room, step < 0)
    table.insert(out, line)
    room, count, row = room - #line - 1, count - 1, row + step
  end
  return out
end

-- The request for the cursor in the current window: the text around it (the engine cuts it
-- finer to `context_window`), and where it was asked, to check the answer still fits.
local function context(id)
  local buf, win = api.nvim_get_current_buf(), api.nvim_get_current_win()
  local row, col = unpack(api.nvim_win_get_cursor(win))
  local room = (opts().context_window or 4000) * 4 -- bytes each side, ~4 chars a token
  local reach = math.min(math.floor((opts().context_window or 4000) / 8), 1000) -- lines
  local line = api.nvim_get_current_line()
  local up = gather(buf, row - 2, -1, reach, room - col, { cut(line:sub(1, col), room, true) })
  local before = {}
  for i = #up, 1, -1 do table.insert(before, up[i]) end
  local tail = cut(line:sub(col + 1), room)
  local after = gather(buf, row, 1, math.floor(reach / 2), room - #tail, { tail })
  local where = { id = id, buf = buf, win = win, row = row - 1, before = line:sub(1, col),
    tick = api.nvim_buf_get_changedtick(buf) }
  return {
    id = id, prefix = table.concat(before, "\n"), suffix = table.concat(after, "\n"), filetype = vim.bo[buf].filetype,
    path = vim.fn.fnamemodify(api.nvim_buf_get_name(buf), ":."), recent = recent_snippets(buf),
  }, where
end

local function clear()
  if state.shown and api.nvim_buf_is_valid(state.shown.buf) then
    api.nvim_buf_clear_namespace(state.shown.buf, ns, 0, -1)
  end
  state.shown = nil
end

-- Dismiss what is shown and stop the request in flight (its connection closes).
---@return nil
function M.dismiss()
  if state.timer then state.timer:stop() end
  if state.pending then
    rpc.notify("completion.cancel", { id = state.pending.id })
    state.pending = nil
  end
  clear()
end

local function request()
  if not api.nvim_get_mode().mode:find("^i") or not M.wanted(api.nvim_get_current_buf()) then return end
  if menu_open() and not opts().show_with_menu then return end
  state.seq = state.seq + 1
  local payload, where = context(state.seq)
  state.pending = where
  rpc.notify("completion.request", payload)
end

local function schedule()
  state.timer = state.timer or uv.new_timer()
  state.timer:stop()
  state.timer:start(opts().debounce or 150, 0, vim.schedule_wrap(request))
end

local function draw()
  local s = state.shown
  api.nvim_buf_clear_namespace(s.buf, ns, 0, -1)
  if api.nvim__ns_set then api.nvim__ns_set(ns, { wins = { s.win } }) end -- not in other windows on it (0.10+)
  local tab = string.rep(" ", vim.bo[s.buf].tabstop) -- a tab in virtual text goes to the screen as it is
  local lines = vim.split((s.items[s.index]:gsub("\t", tab)), "\n", { plain = true })
  local virt_lines = {}
  for i = 2, #lines do virt_lines[i - 1] = { { lines[i], HL } } end
  api.nvim_buf_set_extmark(s.buf, ns, s.row, #s.before, { virt_text = { { lines[1], HL } },
    virt_text_pos = "inline", virt_lines = #virt_lines > 0 and virt_lines or nil, hl_mode = "combine" })
end

-- The engine's ops for completions (chat.apply hands them here).
---@param ops table[]
function M.apply(ops)
  for _, op in ipairs(ops) do
    if op.op == "suggestions" then
      M.suggestions(op)
    elseif op.op == "call" then -- the adapter's Lua function (a key, a model)
      require("codecompanion_py.editor").handle(nil, op)
    end
  end
end

-- Candidates for request `op.id`: to a source that asked, or drawn if the cursor is still where
-- they were asked for.
---@param op { id: integer, items?: string[], error?: string }
function M.suggestions(op)
  local waiter = state.waiters[op.id]
  if waiter then
    state.waiters[op.id] = nil
    return waiter(op.items or {})
  end
  local p = state.pending
  if not p or p.id ~= op.id then return end
  state.pending, state.error = nil, op.error
  if not op.items or #op.items == 0 or api.nvim_get_current_win() ~= p.win then return end
  local row, col = unpack(api.nvim_win_get_cursor(p.win))
  if api.nvim_buf_get_changedtick(p.buf) ~= p.tick or row - 1 ~= p.row or col ~= #p.before
      or not api.nvim_get_mode().mode:find("^i") or (menu_open() and not opts().show_with_menu) then
    return
  end
  clear()
  local items, indent = op.items, string.rep(" ", vim.fn.shiftwidth())
  if vim.bo[p.buf].expandtab then -- leading tabs as the buffer indents: shown and inserted alike
    items = vim.tbl_map(function(item)
      return (("\n" .. item):gsub("\n(\t+)", function(tabs) return "\n" .. indent:rep(#tabs) end)):sub(2)
    end, items)
  end
  state.shown = vim.tbl_extend("force", p, { items = items, index = 1 })
  draw()
  fire("CompletionShown", { bufnr = p.buf, count = #op.items })
end

-- Typed text that the suggestion shows is taken off its start: no new request.
local function consume(buf)
  local s = state.shown
  if not s or s.buf ~= buf or s.win ~= api.nvim_get_current_win() then return false end
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local before = api.nvim_get_current_line():sub(1, col)
  if row - 1 ~= s.row or before:sub(1, #s.before) ~= s.before then return false end
  local typed, current = before:sub(#s.before + 1), s.items[s.index]
  local left, index = {}, 1
  for _, item in ipairs(s.items) do
    if #item > #typed and item:sub(1, #typed) == typed then
      table.insert(left, item:sub(#typed + 1))
      if item == current then index = #left end
    end
  end
  if #left == 0 then return false end
  s.items, s.index, s.before, s.tick = left, index, before, api.nvim_buf_get_changedtick(buf)
  draw()
  return true
end

local function on_change(ev)
  if not M.wanted(ev.buf) then return M.dismiss() end -- turned-off buffers' text is never sent
  remember_edit(ev.buf, api.nvim_win_get_cursor(0)[1] - 1)
  if consume(ev.buf) then return end
  M.dismiss()
  schedule()
end

-- The cursor moved with no change (arrows, a click): what was shown no longer fits.
local function on_move(ev)
  local s = state.shown
  if s and api.nvim_buf_get_changedtick(ev.buf) ~= s.tick then return end -- TextChangedI follows
  local row, col = unpack(api.nvim_win_get_cursor(0))
  if s and row - 1 == s.row and col == #s.before then return end
  M.dismiss()
  if M.wanted(ev.buf) then schedule() end
end

-- What is shown, if it is still at the cursor: keys typed just before in the same typeahead
-- move it with no TextChangedI or CursorMovedI yet (they wait for the typeahead to empty).
local function current()
  local s = state.shown
  if not s then return nil end
  local row, col = unpack(api.nvim_win_get_cursor(0))
  if s.buf ~= api.nvim_get_current_buf() or api.nvim_buf_get_changedtick(s.buf) ~= s.tick or row - 1 ~= s.row
      or col ~= #s.before then
    return M.dismiss()
  end
  return s
end

-- How much of `item` an accept takes.
local PARTS = {
  whole = function(item) return item end,
  word = function(item) -- the buffer's 'iskeyword' (café_crème is one word), else a run of punctuation
    local word = vim.fn.matchstr(item, [[^\s*\%(\k\+\|\%(\k\@!\S\)\+\)]])
    return word ~= "" and word or item
  end,
  line = function(item) return item:match("^\n?[^\n]*") end,
}

local function break_undo()
  vim.o.undolevels = vim.o.undolevels -- setting it closes the undo block (:h undo-break)
end

-- Insert the shown candidate (or its next word or line) at the cursor, as one undo step.
---@param kind? "whole"|"word"|"line"
---@return boolean accepted false when nothing is shown
function M.accept(kind)
  local s = current()
  if not s then return false end
  local item = s.items[s.index]
  local text = PARTS[kind or "whole"](item)
  local lines = vim.split(text, "\n", { plain = true })
  break_undo()
  api.nvim_buf_set_text(s.buf, s.row, #s.before, s.row, #s.before, lines)
  break_undo()
  local row, col = s.row + #lines - 1, (#lines == 1 and #s.before or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { row + 1, col })
  local rest = item:sub(#text + 1)
  if rest == "" then
    clear()
  else -- the rest stays shown, at the new cursor
    s.items, s.index, s.row = { rest }, 1, row
    s.before, s.tick = api.nvim_get_current_line():sub(1, col), api.nvim_buf_get_changedtick(s.buf)
    draw()
  end
  fire("CompletionAccepted", { bufnr = s.buf, kind = kind or "whole", text = text })
  return true
end

-- Show the next (`step` 1) or the previous (-1) candidate.
---@param step integer
---@return boolean cycled false when nothing is shown
function M.cycle(step)
  local s = current()
  if not s then return false end
  s.index = (s.index - 1 + step) % #s.items + 1
  draw()
  return true
end

-- Ask for candidates at the cursor for a menu source; `callback(items)` gets them.
---@param callback fun(items: string[])
---@return integer id
function M.fetch(callback)
  state.seq = state.seq + 1
  local payload = context(state.seq)
  payload.menu = true -- its own lane: the ghost text's requests do not cancel it
  state.waiters = { [state.seq] = callback } -- the engine stops the menu's request before this one
  rpc.notify("completion.request", payload)
  return state.seq
end

-- Candidates as LSP items for a menu: each replaces the word before the cursor with that word
-- and the candidate (menus filter on the word), on line `row` (0-based) up to byte `col`.
---@param items string[]
---@param row integer
---@param col integer
---@param kind integer the menu's kind for text
---@return table[]
function M.lsp_items(items, row, col, kind)
  local word = api.nvim_get_current_line():sub(1, col):match("[%w_]*$")
  local out = {}
  for _, text in ipairs(items) do
    local label = word .. (text:match("^[^\n]*") or "")
    table.insert(out, { label = label, filterText = label, kind = kind, insertTextFormat = 1,
      documentation = { kind = "plaintext", value = word .. text },
      textEdit = { newText = word .. text, range = { start = { line = row, character = col - #word },
        ["end"] = { line = row, character = col } } } })
  end
  return out
end

---@param id integer a fetch's
function M.cancel(id)
  if state.waiters[id] then
    state.waiters[id] = nil
    rpc.notify("completion.cancel", { id = id })
  end
end

local ACTIONS = {
  accept = function() return M.accept("whole") end,
  accept_word = function() return M.accept("word") end,
  accept_line = function() return M.accept("line") end,
  next = function() return M.cycle(1) end,
  prev = function() return M.cycle(-1) end,
  dismiss = function()
    local shown = state.shown ~= nil
    M.dismiss()
    return shown
  end,
}

-- Nothing shown: the key does what it did, the user's own mapping (saved) or Neovim's.
local function fallback(lhs, saved)
  if not saved then return api.nvim_feedkeys(vim.keycode(lhs), "nit", false) end -- as typed, before what follows
  local keys = saved.callback and saved.callback() or saved.rhs
  if saved.expr == 1 and not saved.callback then keys = api.nvim_eval(saved.rhs) end
  if type(keys) == "string" and (saved.expr == 1 or not saved.callback) then
    api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, true, true), saved.noremap == 1 and "nit" or "mit", false)
  end
end

local function map_keys()
  for name, action in pairs(ACTIONS) do
    local lhs = (opts().keymaps or {})[name]
    if type(lhs) == "string" and lhs ~= "" then
      local saved = vim.fn.maparg(lhs, "i", false, true)
      saved = (next(saved) and saved.buffer == 0) and saved or nil -- a global mapping of the user's
      vim.keymap.set("i", lhs, function()
        if not action() then fallback(lhs, saved) end
      end, { desc = "CodeCompanion completion: " .. name })
      state.maps[lhs] = saved or false
    end
  end
end

---@return nil
function M.enable()
  if state.enabled then return end
  state.enabled = true
  local function highlight() api.nvim_set_hl(0, HL, { link = "Comment", default = true }) end
  highlight()
  local group = api.nvim_create_augroup("codecompanion_py_completion", { clear = true })
  api.nvim_create_autocmd("ColorScheme", { group = group, callback = highlight }) -- :hi clear drops it
  api.nvim_create_autocmd({ "TextChangedI", "TextChangedP" }, { group = group, callback = on_change })
  api.nvim_create_autocmd("CursorMovedI", { group = group, callback = on_move })
  api.nvim_create_autocmd("InsertEnter", { group = group, callback = function(ev)
    if M.wanted(ev.buf) then schedule() end
  end })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave", "WinLeave" }, { group = group, callback = M.dismiss })
  map_keys()
  if package.loaded["cmp"] then require("codecompanion_py.completion.cmp").register() end
end

---@return nil
function M.disable()
  if not state.enabled then return end
  state.enabled = false
  M.dismiss()
  pcall(api.nvim_del_augroup_by_name, "codecompanion_py_completion")
  for lhs, saved in pairs(state.maps) do
    pcall(vim.keymap.del, "i", lhs)
    if saved then vim.fn.mapset("i", false, saved) end -- the user's mapping back
  end
  state.maps = {}
end

-- :CodeCompanionCompletion enable|disable|toggle
---@param action string
function M.command(action)
  if action == "toggle" then action = state.enabled and "disable" or "enable" end
  if action ~= "enable" and action ~= "disable" then
    return vim.notify("CodeCompanion: :CodeCompanionCompletion enable|disable|toggle", vim.log.levels.ERROR)
  end
  M[action]()
end

-- For statuslines: on or off, and what predictions are doing.
---@return { enabled: boolean, state: "off"|"idle"|"waiting"|"shown"|"error", error?: string, count?: integer,
---  index?: integer }
function M.status()
  if not state.enabled then return { enabled = false, state = "off" } end
  local s = state.shown
  if s then return { enabled = true, state = "shown", count = #s.items, index = s.index } end
  if state.pending then return { enabled = true, state = "waiting" } end
  return { enabled = true, state = state.error and "error" or "idle", error = state.error }
end

return M
