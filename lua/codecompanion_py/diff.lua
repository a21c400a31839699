-- One diff review for an edit the LLM made in a buffer (the inline assistant's): the new
-- lines stand in the buffer, highlighted, with the lines they replaced shown as virtual
-- lines above them, until the user decides.
--   g1 always accept (this buffer, from now on)   g2 accept   g3 reject   g4 cancel (reject)
--   g5 accept the hunk under the cursor   g6 reject it   } { the next / previous hunk
--   gv the whole change in a diff tab
-- The keys are CodeCompanion's `interactions.shared.keymaps` (its names, changeable as there;
-- the inline review's `interactions.inline.keymaps` win), g5 and g6 this plugin's own; they are
-- listed above the first hunk's new lines, brought into view (never moving the user's window).
-- Highlights: CodeCompanionDiffAdd, CodeCompanionDiffDelete and CodeCompanionDiffHint, linked
-- by default to DiffAdd, DiffDelete and Comment; within a changed line the changed words,
-- CodeCompanionDiffText and CodeCompanionDiffTextDelete (both DiffText by default), as
-- `display.diff.word_highlights` says.
--
-- Rejecting puts the lines back byte for byte and the buffer's 'modified' as it was; the
-- writes of the edit are one undo step, so accepting leaves one `u` to undo it all. A buffer
-- the user changed while the diff shows is not rejected over (that would lose their edit):
-- the review says so and the change stays, for `u`.
--
-- One review per buffer: a second one waits until the first is settled (by the user, never
-- for them). A buffer unloaded or wiped during its review settles it as rejected.
local api = vim.api

local M = {}

local ns = api.nvim_create_namespace("codecompanion_py_diff")

M.KEYMAPS = {
  always_accept = { modes = { n = "g1" }, description = "Always accept changes in this buffer" },
  accept_change = { modes = { n = "g2" }, description = "Accept change" },
  reject_change = { modes = { n = "g3" }, description = "Reject change" },
  cancel = { modes = { n = "g4" }, description = "Cancel: reject the change" },
  accept_hunk = { modes = { n = "g5" }, description = "Accept the hunk under the cursor" },
  reject_hunk = { modes = { n = "g6" }, description = "Reject the hunk under the cursor" },
  next_hunk = { modes = { n = "}" }, description = "Go to next hunk" },
  previous_hunk = { modes = { n = "{" }, description = "Go to previous hunk" },
  view_diff = { modes = { n = "gv" }, description = "View the proposed diff" },
}

M.reviews = {} ---@type table<integer, table> the review of each buffer
M.waiting = {} ---@type table<integer, function[]> reviews to start once the buffer's is settled

local function highlights()
  api.nvim_set_hl(0, "CodeCompanionDiffAdd", { link = "DiffAdd", default = true })
  api.nvim_set_hl(0, "CodeCompanionDiffDelete", { link = "DiffDelete", default = true })
  api.nvim_set_hl(0, "CodeCompanionDiffHint", { link = "Comment", default = true })
  api.nvim_set_hl(0, "CodeCompanionDiffText", { link = "DiffText", default = true })
  api.nvim_set_hl(0, "CodeCompanionDiffTextDelete", { link = "DiffText", default = true })
end

-- `section`: a review of its own (CodeCompanion's `interactions.inline.keymaps`) whose keys
-- win over the shared ones.
local function keymaps(section)
  local config, of = require("codecompanion_py").config or {}, require("codecompanion_py.chat.keymaps").user
  local user = vim.tbl_extend("force", of(config, "shared"), section and of(config, section) or {})
  local out = {}
  for name, default in pairs(M.KEYMAPS) do
    local map = user[name]
    if map ~= false then
      out[name] = vim.tbl_deep_extend("force", default, type(map) == "table" and map or {})
    end
  end
  return out
end

-- The region's lines now.
local function current(review)
  return api.nvim_buf_get_lines(review.buf, review.start, review.start + review.count, false)
end

local function joined(lines)
  return #lines > 0 and (table.concat(lines, "\n") .. "\n") or ""
end

-- { a_start, a_count, b_start, b_count }: `base` lines a.. became the region's lines b..
---@param base string[]
---@param lines string[]
---@return integer[][]
function M.hunks(base, lines)
  return vim.diff(joined(base), joined(lines), { result_type = "indices", algorithm = "histogram" })
end

-- The line's words, runs of blanks and other characters, as byte ranges { from, to } (0-based, to exclusive).
local function tokens(line)
  local out, at = {}, 1
  while at <= #line do
    local _, stop = line:find("^[%w_]+", at)
    stop = stop or select(2, line:find("^%s+", at)) or select(2, line:find("^[%z\1-\127\194-\244][\128-\191]*", at))
    table.insert(out, { at - 1, stop })
    at = stop + 1
  end
  return out
end

-- The changed words of `old` and of `new` (a pair of lines of a changed hunk), as byte ranges.
---@param old string
---@param new string
---@return integer[][], integer[][]
function M.words(old, new)
  local a, b = tokens(old), tokens(new)
  local function text(line, list)
    return joined(vim.tbl_map(function(r) return line:sub(r[1] + 1, r[2]) end, list))
  end
  local gone, added = {}, {}
  for _, h in ipairs(vim.diff(text(old, a), text(new, b), { result_type = "indices" })) do
    if h[2] > 0 then table.insert(gone, { a[h[1]][1], a[h[1] + h[2] - 1][2] }) end
    if h[4] > 0 then table.insert(added, { b[h[3]][1], b[h[3] + h[4] - 1][2] }) end
  end
  return gone, added
end

-- An old line as virtual text: its changed words in CodeCompanionDiffTextDelete.
local function old_line(line, spans)
  local out, at = {}, 0
  for _, span in ipairs(spans) do
    table.insert(out, { line:sub(at + 1, span[1]), "CodeCompanionDiffDelete" })
    table.insert(out, { line:sub(span[1] + 1, span[2]), { "CodeCompanionDiffDelete", "CodeCompanionDiffTextDelete" } })
    at = span[2]
  end
  table.insert(out, { line:sub(at + 1), "CodeCompanionDiffDelete" })
  return out
end

-- The hunk's rows in the buffer (0-based, end exclusive) and where its old lines are drawn.
local function rows(review, hunk)
  local _, _, b_start, b_count = unpack(hunk)
  local first = review.start + (b_count > 0 and b_start - 1 or b_start)
  return first, first + b_count
end

-- Virtual lines above line 1 are drawn only when the view is scrolled up to them (topfill):
-- each window showing the top of the buffer is, so the old lines and the keys are seen.
-- `jump`: a window other than the user's goes to the first change when it is out of view.
local function reveal(review, jump)
  local user_win, hunk = api.nvim_get_current_win(), jump and review.hunks[1]
  local row = hunk and math.min(rows(review, hunk) + 1, api.nvim_buf_line_count(review.buf))
  for _, win in ipairs(vim.fn.win_findbuf(review.buf)) do
    api.nvim_win_call(win, function()
      if row and win ~= user_win and (row < vim.fn.line("w0") or row > vim.fn.line("w$")) then
        api.nvim_win_set_cursor(win, { row, 0 })
        vim.cmd("normal! zz")
      end
      if vim.fn.line("w0") == 1 and review.filler > 0 then
        vim.fn.winrestview({ topline = 1, topfill = review.filler }) -- topline: kept after BufWinEnter
      end
    end)
  end
end

local function render(review)
  local word = require("codecompanion_py.options").get("display.diff.word_highlights") or {}
  api.nvim_buf_clear_namespace(review.buf, ns, 0, -1)
  review.filler = 0
  local last_row = api.nvim_buf_line_count(review.buf) - 1
  for index, hunk in ipairs(review.hunks) do
    local a_start, a_count = hunk[1], hunk[2]
    local first, stop = rows(review, hunk)
    local new_lines = api.nvim_buf_get_lines(review.buf, first, stop, false)
    local old = {}
    for i = 0, math.max(a_count, stop - first) - 1 do
      local before, after = i < a_count and review.base[a_start + i] or nil, new_lines[i + 1]
      local gone, added = {}, {}
      if before and after then -- a changed line: its changed words too
        gone, added = M.words(before, after)
      end
      if after then
        local row = first + i
        api.nvim_buf_set_extmark(review.buf, ns, row, 0, { line_hl_group = "CodeCompanionDiffAdd", sign_text = "+" })
        for _, span in ipairs(word.additions ~= false and added or {}) do
          api.nvim_buf_set_extmark(review.buf, ns, row, span[1],
            { end_col = span[2], hl_group = "CodeCompanionDiffText", priority = 5000 })
        end
      end
      if before then
        table.insert(old, old_line(before, word.deletions ~= false and gone or {}))
      end
    end
    if index == 1 then -- last, right above the new lines: shown when the old ones overflow the window
      table.insert(old, { { review.hint, "CodeCompanionDiffHint" } })
    end
    if #old > 0 then
      local above = first <= last_row
      api.nvim_buf_set_extmark(review.buf, ns, math.min(first, last_row), 0,
        { virt_lines = old, virt_lines_above = above })
      review.filler = (above and first == 0) and #old or review.filler
    end
  end
  reveal(review)
end

local function write(review, first, stop, lines)
  pcall(vim.cmd.undojoin) -- the review's writes join the edit's undo step
  api.nvim_buf_set_lines(review.buf, first, stop, false, lines)
  review.count = review.count + #lines - (stop - first)
  review.tick = api.nvim_buf_get_changedtick(review.buf)
end

local function changed_by_user(review)
  if api.nvim_buf_get_changedtick(review.buf) ~= review.tick then
    vim.notify("CodeCompanion: the buffer changed while the diff was shown, so it is not rolled back over "
      .. "your edit; the change stays (u undoes it)", vim.log.levels.WARN)
    return true
  end
end

local function unmap(review)
  for _, map in ipairs(review.mapped) do
    pcall(vim.keymap.del, map.mode, map.lhs, { buffer = review.buf })
    if map.previous then
      pcall(vim.fn.mapset, map.mode, false, map.previous)
    end
  end
end

-- Run `begin` now if no review is pending on `buf`, else once that one is settled.
---@param buf integer
---@param begin fun()
function M.when_free(buf, begin)
  if not M.reviews[buf] then
    return begin()
  end
  M.waiting[buf] = M.waiting[buf] or {}
  table.insert(M.waiting[buf], begin)
end

-- Why `buf` cannot take another change now (a review is pending on it), or nil.
---@param buf integer
---@return string|nil why
function M.busy(buf)
  local review = M.reviews[buf]
  if review then
    return ("a change to this buffer is under review: %s accepts it, %s rejects it"):format(review.keys.accept,
      review.keys.reject)
  end
end

local function start_next(buf)
  local waiting = M.waiting[buf] or {}
  local begin = table.remove(waiting, 1)
  if #waiting == 0 then
    M.waiting[buf] = nil
  end
  if begin then
    vim.schedule(function() M.when_free(buf, begin) end)
  end
end

-- `gone`: the buffer was unloaded or wiped during the review.
local function finish(review, result, gone)
  M.reviews[review.buf] = nil
  if review.autocmd then
    pcall(api.nvim_del_autocmd, review.autocmd)
  end
  if api.nvim_buf_is_valid(review.buf) then
    api.nvim_buf_clear_namespace(review.buf, ns, 0, -1)
    unmap(review)
  end
  if review.on_done then
    review.on_done(result, { accepted = review.accepted, rejected = review.rejected, gone = gone, base = review.base })
  end
  start_next(review.buf)
end

local function refresh(review)
  review.hunks = M.hunks(review.base, current(review))
  if #review.hunks == 0 then
    local result = review.rejected == 0 and "accepted" or (review.accepted == 0 and "rejected" or "partial")
    if result == "rejected" and api.nvim_buf_is_valid(review.buf) then
      vim.bo[review.buf].modified = review.modified
    end
    return finish(review, result)
  end
  render(review)
end

local actions = {}

function actions.accept_change(review)
  review.accepted = review.accepted + #review.hunks
  finish(review, review.rejected == 0 and "accepted" or "partial")
end

function actions.always_accept(review)
  vim.b[review.buf].codecompanion_always_accept = true
  vim.notify("CodeCompanion: changes to this buffer are accepted from now on")
  actions.accept_change(review)
end

function actions.reject_change(review)
  if changed_by_user(review) then
    return finish(review, "kept")
  end
  review.rejected = review.rejected + #review.hunks
  write(review, review.start, review.start + review.count, review.base)
  refresh(review)
end
actions.cancel = actions.reject_change

-- The hunk under the cursor (or the nearest after it).
local function hunk_here(review)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  for _, hunk in ipairs(review.hunks) do
    local first, stop = rows(review, hunk)
    if row < math.max(stop, first + 1) then
      return hunk
    end
  end
  return review.hunks[#review.hunks]
end

function actions.accept_hunk(review)
  local hunk = hunk_here(review)
  local a_start, a_count, b_start, b_count = unpack(hunk)
  local lines = current(review)
  local new = vim.list_slice(lines, b_start, b_start + b_count - 1)
  local base = vim.list_slice(review.base, 1, a_count > 0 and a_start - 1 or a_start)
  vim.list_extend(base, new)
  vim.list_extend(base, vim.list_slice(review.base, a_start + a_count))
  review.base = base
  review.accepted = review.accepted + 1
  refresh(review)
end

function actions.reject_hunk(review)
  if changed_by_user(review) then
    return finish(review, "kept")
  end
  local hunk = hunk_here(review)
  local a_start, a_count = hunk[1], hunk[2]
  local first, stop = rows(review, hunk)
  write(review, first, stop, vim.list_slice(review.base, a_start, a_start + a_count - 1))
  review.rejected = review.rejected + 1
  refresh(review)
end

local function jump(review, step)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local starts = vim.tbl_map(function(hunk) return (rows(review, hunk)) end, review.hunks)
  local target
  if step > 0 then
    for _, first in ipairs(starts) do
      if first > row then target = first break end
    end
  else
    for i = #starts, 1, -1 do
      if starts[i] < row then target = starts[i] break end
    end
  end
  if target then
    api.nvim_win_set_cursor(0, { math.min(target + 1, api.nvim_buf_line_count(review.buf)), 0 })
  end
end

function actions.next_hunk(review) jump(review, 1) end
function actions.previous_hunk(review) jump(review, -1) end

function actions.view_diff(review)
  local before, after = review.base, current(review)
  vim.cmd("tabnew")
  local function pane(lines, name)
    local buf = api.nvim_get_current_buf()
    api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].modifiable = "nofile", "wipe", false
    vim.bo[buf].filetype = vim.bo[review.buf].filetype
    pcall(api.nvim_buf_set_name, buf, name)
    vim.cmd("diffthis")
    vim.keymap.set("n", "q", "<Cmd>tabclose<CR>", { buffer = buf })
  end
  pane(before, ("[CodeCompanion] before %d"):format(review.buf))
  vim.cmd("vnew")
  pane(after, ("[CodeCompanion] after %d"):format(review.buf))
end

-- Review the region of `buf` from row `start` (0-based), `count` lines long now, that was
-- `original`. `modified`: the buffer's flag before the edit. on_done(result, counts) with
-- result "accepted", "rejected", "partial" or "kept" (the user edited during the review);
-- counts.gone when the buffer was closed during it (counts.base: the lines it settled on).
-- With a review pending on `buf`, this one starts when that one is settled. `keymaps`: the
-- config section whose keymaps win over `interactions.shared.keymaps` ("inline").
---@param buf integer
---@param opts { start: integer, count: integer, original: string[], modified?: boolean,
---  on_done?: fun(result: string, counts: table), keymaps?: string }
function M.start(buf, opts)
  if M.reviews[buf] then
    return M.when_free(buf, function() M.start(buf, opts) end)
  end
  if not api.nvim_buf_is_loaded(buf) then -- closed while it waited
    return opts.on_done and opts.on_done("rejected", { accepted = 0, rejected = 0, gone = true })
  end
  highlights()
  local review = {
    buf = buf,
    start = opts.start,
    count = opts.count,
    base = opts.original,
    modified = opts.modified,
    on_done = opts.on_done,
    tick = api.nvim_buf_get_changedtick(buf),
    accepted = 0,
    rejected = 0,
    mapped = {},
  }
  local maps = keymaps(opts.keymaps)
  local function key(name)
    local map = maps[name]
    local lhs = map and map.modes and map.modes.n
    return type(lhs) == "table" and lhs[1] or lhs or "-"
  end
  review.hint = ("  %s accept  %s reject  %s/%s hunk  %s diff  %s always accept"):format(key("accept_change"),
    key("reject_change"), key("accept_hunk"), key("reject_hunk"), key("view_diff"), key("always_accept"))
  review.keys = { accept = key("accept_change"), reject = key("reject_change") }
  if vim.b[buf].codecompanion_always_accept then
    return finish(review, "accepted")
  end
  M.reviews[buf] = review
  review.autocmd = api.nvim_create_autocmd("BufUnload", { buffer = buf, once = true, callback = function()
    if M.reviews[buf] == review then -- closed: what was not accepted yet is rejected
      review.rejected = review.rejected + #(review.hunks or {})
      finish(review, review.accepted == 0 and "rejected" or "partial", true)
    end
  end })
  api.nvim_create_autocmd("BufWinEnter", { buffer = buf, callback = function() -- shown again
    if M.reviews[buf] ~= review then
      return true -- settled: this autocmd goes
    end
    reveal(review)
  end })
  for name, map in pairs(maps) do
    for mode, lhs in pairs(map.modes or {}) do
      for _, key_lhs in ipairs(type(lhs) == "table" and lhs or { lhs }) do
        local previous = vim.fn.maparg(key_lhs, mode, false, true)
        table.insert(review.mapped, { mode = mode, lhs = key_lhs,
          previous = previous.buffer == 1 and previous or nil })
        vim.keymap.set(mode, key_lhs, function()
          if M.reviews[buf] == review then
            actions[name](review)
          end
        end, vim.tbl_extend("force", { nowait = true }, map.opts or {},
          { buffer = buf, desc = "CodeCompanion: " .. map.description }))
      end
    end
  end
  refresh(review)
  if M.reviews[buf] == review then reveal(review, true) end
  return review
end

-- For tests and for `require("codecompanion_py.diff").act(buf, "accept_hunk")`.
---@param buf integer
---@param name string an action of the review's keymaps ("accept_hunk"...)
function M.act(buf, name)
  local review = M.reviews[buf]
  if review and actions[name] then
    actions[name](review)
  end
end

return M
