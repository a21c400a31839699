-- CodeCompanion's code review (:CodeCompanionCodeReview): the agent's hunks since the
-- baseline in the quickfix list, one entry per hunk, with `a` `c` `d` `x` there; comments on
-- lines shown as virtual text; `Approve`, `Share`, and `#{code_review}` in a chat. The engine
-- does the git and the files (codecompanion_py/review_calls.py); this is the editor's side.
-- Options: `interactions.code_review` (enabled, keymaps, display.diff, display.virtual_text,
-- opts.storage_dir), as CodeCompanion 19 has them.
local api = vim.api
local options = require("codecompanion_py.options")
local ui = require("codecompanion_py.review_ui")

local M = {}

-- CodeCompanion's defaults (init.lua's `defaults`), for a config that was never set up.
M.DEFAULTS = require("codecompanion_py").defaults.interactions.code_review
local REPLACEMENT = "my comments from the code review, which I've attached"
local TITLE = "CodeCompanion code review"
local ns = api.nvim_create_namespace("codecompanion_py_review")

-- `interactions.code_review.<path>` as set, else CodeCompanion's default.
local function opt(path)
  local value = options.get("interactions.code_review." .. path)
  if value == nil then
    return vim.tbl_get(M.DEFAULTS, unpack(vim.split(path, ".", { plain = true })))
  end
  return value
end

local function notify(msg, level)
  vim.notify("CodeCompanion: " .. msg, level or vim.log.levels.INFO)
end

---@return boolean
function M.enabled()
  return opt("enabled") ~= false
end

-- The comments pending, as the engine last listed them ({ file, start_line, end_line, comment }).
local pending ---@type table[]|nil

-- One call into the engine with the folder and the storage; nil (the reason told) when it failed.
local function request(method, payload)
  payload = vim.tbl_extend("force", { cwd = vim.fn.getcwd(), dir = vim.fn.expand(opt("opts.storage_dir")) },
    payload or {})
  local ok, answer = pcall(require("codecompanion_py.rpc").request, method, payload)
  if not ok or type(answer) ~= "table" then
    return notify(tostring(answer), vim.log.levels.ERROR)
  end
  for _, warning in ipairs(answer.warnings or {}) do
    vim.notify(warning, vim.log.levels.WARN)
  end
  if answer.comments then
    pending = answer.comments
    M.redraw()
  end
  if answer.error then
    return notify(answer.error, vim.log.levels.WARN)
  end
  return answer
end

-- Virtual text ------------------------------------------------------------------------------

-- The pending comments drawn again in every loaded buffer.
---@return nil
function M.redraw()
  for _, buf in ipairs(api.nvim_list_bufs()) do
    ui.draw(buf, ns, pending, opt("display.virtual_text"))
  end
end

api.nvim_create_autocmd("BufWinEnter", {
  group = api.nvim_create_augroup("codecompanion_py_review", { clear = true }),
  callback = function(ev)
    if pending then
      ui.draw(ev.buf, ns, pending, opt("display.virtual_text"))
    end
  end,
})

-- The quickfix list ------------------------------------------------------------------------

local last = { scope = "agent" } -- the review shown last: its scope, root and baseline ref

local function ours()
  local list = vim.fn.getqflist({ title = 1, context = 1 })
  return type(list.context) == "table" and list.context.codecompanion_review == true
end

local function entry_under_cursor()
  local items = vim.fn.getqflist()
  local index = vim.bo.buftype == "quickfix" and vim.fn.line(".") or vim.fn.getqflist({ idx = 0 }).idx
  local item = items[index]
  return item and type(item.user_data) == "table" and item or nil, index
end

local actions = {}

local function set_keymaps(buf)
  for name, default in pairs(M.DEFAULTS.keymaps) do
    local map = opt("keymaps." .. name)
    if map ~= false then
      map = vim.tbl_deep_extend("force", default, type(map) == "table" and map or {})
      local action = type(map.callback) == "function" and map.callback
        or actions[tostring(map.callback):gsub("^keymaps%.", "")]
      for mode, lhs in pairs(map.modes or {}) do
        for _, key in ipairs(type(lhs) == "table" and lhs or { lhs }) do
          vim.keymap.set(mode, key, function()
            if not ours() then -- another list in this window: the key as it was
              return api.nvim_feedkeys(vim.keycode(key), "n", false)
            end
            action()
          end, { buffer = buf, nowait = true, desc = map.description })
        end
      end
    end
  end
end

-- `:CodeCompanionCodeReview [All]`: the hunks in the quickfix list (a fresh list, or the
-- review's own list replaced in place when it is the current one).
---@param scope? "agent"|"all"
---@param keep? integer the entry to stay on
function M.open(scope, keep)
  last.scope = scope or "agent"
  local answer = request("review.open", { scope = last.scope })
  if not answer then
    return
  end
  if answer.fallback then
    notify(answer.fallback .. ": listing the files edited this session", vim.log.levels.WARN)
    return require("codecompanion_py.chat.open").changes()
  end
  last.root, last.baseline_ref = answer.root, answer.baseline_ref
  local items = answer.items or {}
  if #items == 0 and not keep then
    if ours() then -- no stale hunks left in the list
      vim.fn.setqflist({}, "r", { title = TITLE .. ": nothing to review", items = {} })
    end
    return notify(last.scope == "all" and "nothing has changed since the baseline"
      or "no changes to review (:CodeCompanionCodeReview All shows every change since the baseline)")
  end
  local title = ("%s: %d hunk%s, one entry per hunk%s"):format(TITLE, #items, #items == 1 and "" or "s",
    last.scope == "all" and " (All)" or "")
  vim.fn.setqflist({}, ours() and "r" or " ",
    { title = title, items = items, context = { codecompanion_review = true } })
  local from = api.nvim_get_current_win()
  vim.cmd("botright copen")
  set_keymaps(api.nvim_get_current_buf())
  if keep and #items > 0 then
    api.nvim_win_set_cursor(0, { math.min(keep, #items), 0 })
  elseif not keep then
    api.nvim_set_current_win(from)
  end
end

local function in_file(entry, index)
  if vim.bo.buftype == "quickfix" then
    vim.cmd("cc " .. index)
  end
  return entry
end

local function current_spot()
  local entry, index = entry_under_cursor()
  if vim.bo.buftype == "quickfix" then
    return entry and { path = entry.user_data.path, line = entry.lnum }, index
  end
  local name = api.nvim_buf_get_name(0)
  return name ~= "" and { path = name, line = api.nvim_win_get_cursor(0)[1] } or nil, index
end

local function mark(send)
  local spot, index = current_spot()
  if not spot then
    return notify("put the cursor on a hunk, in its file or in the review's list", vim.log.levels.WARN)
  end
  local answer = send(spot)
  if answer then
    notify(answer.message)
    if ours() then
      M.open(last.scope, vim.bo.buftype == "quickfix" and index or nil)
    end
  end
end

function actions.accept() mark(function(spot) return request("review.accept", spot) end) end
function actions.ignore() mark(function(spot) return request("review.ignore", spot) end) end

function actions.comment()
  local entry, index = entry_under_cursor()
  if entry then
    in_file(entry, index)
    M.comment({ range = 2, line1 = entry.lnum, line2 = entry.end_lnum > 0 and entry.end_lnum or entry.lnum })
  end
end

function actions.diff()
  local entry, index = entry_under_cursor()
  local diff = opt("display.diff")
  if not entry or diff.enabled == false then
    return
  end
  local target = { root = last.root, path = vim.fs.joinpath(last.root or "", entry.user_data.path),
    baseline_ref = last.baseline_ref, line = entry.lnum, id = entry.user_data.key }
  if type(diff.provider) == "function" then
    return diff.provider(target)
  end
  local answer = request("review.baseline_text", { path = entry.user_data.path })
  if not answer then
    return
  end
  in_file(entry, index)
  ui.diff(answer, target, diff.layout)
end

-- Comments ---------------------------------------------------------------------------------

local function comment_on(file, line)
  for _, c in ipairs(pending or {}) do
    if c.file == file and c.start_line <= line and line <= c.end_line then
      return c
    end
  end
end

-- `Comment`: on the line (or the range), or edit the comment already there; empty deletes it.
---@param args? { range?: integer, line1?: integer, line2?: integer }
function M.comment(args)
  args = args or {}
  local buf = api.nvim_get_current_buf()
  local name = api.nvim_buf_get_name(buf)
  if name == "" or vim.bo[buf].buftype ~= "" then
    return notify("comment from the file itself (not a list, a diff's baseline side or a scratch buffer)",
      vim.log.levels.WARN)
  end
  if not request("review.comments") then
    return
  end
  local row = api.nvim_win_get_cursor(0)[1]
  local first, last_line = row, row
  if (args.range or 0) > 0 then
    first, last_line = args.line1, args.line2
  end
  local existing = comment_on(vim.uv.fs_realpath(name) or name, first)
  if existing and (args.range or 0) == 0 then
    first, last_line = existing.start_line, existing.end_line
  end
  local code = table.concat(api.nvim_buf_get_lines(buf, first - 1, last_line, false), "\n")
  ui.input(("Comment on %s:%d-%d"):format(vim.fn.fnamemodify(name, ":~:."), first, last_line),
    existing and existing.comment, function(text)
      request("review.comment", { path = name, line = first, end_line = last_line, code = code,
        filetype = vim.bo[buf].filetype, text = text })
    end)
end

-- `Comments`: the pending comments file, as markdown; `:bw` (or closing it) saves it.
---@return nil
function M.edit_comments()
  local answer = request("review.comments")
  if not answer then
    return
  end
  if #(answer.comments or {}) == 0 then
    return notify("no pending review comments", vim.log.levels.WARN)
  end
  vim.cmd("split")
  local buf = api.nvim_create_buf(false, true)
  api.nvim_win_set_buf(0, buf)
  vim.bo[buf].bufhidden, vim.bo[buf].filetype = "wipe", "markdown"
  pcall(api.nvim_buf_set_name, buf, "codecompanion-review://" .. answer.comments_file)
  local before = vim.split(answer.text or "", "\n", { plain = true })
  api.nvim_buf_set_lines(buf, 0, -1, false, before)
  api.nvim_create_autocmd("BufWipeout", { buffer = buf, once = true, callback = function()
    local now = api.nvim_buf_get_lines(buf, 0, -1, false) -- a scratch buffer: never 'modified'
    if not vim.deep_equal(now, before) then
      vim.schedule(function() request("review.save_comments", { text = table.concat(now, "\n") }) end)
    end
  end })
end

-- Ending a round -----------------------------------------------------------------------------

---@return nil
function M.approve()
  local answer = request("review.approve")
  if answer then
    notify(answer.message)
    if answer.warning then
      notify(answer.warning, vim.log.levels.WARN)
    end
  end
end

---@return nil
function M.share()
  local answer = request("review.share")
  if answer then
    for _, register in ipairs({ "+", "*", '"' }) do
      pcall(vim.fn.setreg, register, answer.path)
    end
    notify(("code review ready at %s (path copied to the clipboard)"):format(answer.path))
  end
end

-- `#{code_review}`: what it sends, or nil with nothing pending (the tag then does nothing).
---@return table|nil item
function M.context_item()
  if not M.enabled() then
    return nil
  end
  local limit = tonumber(require("codecompanion_py.chat.config").opts().max_context_chars)
  local got = request("review.pending", { limit = limit or require("codecompanion_py.chat.context").DEFAULT_MAX_CHARS })
  if got and got.ids then
    -- each round's its own item (the id comes of the label): never one that replaces an earlier round
    local label = ("code review: %d comment%s (%s)"):format(got.count, got.count == 1 and "" or "s",
      got.ids[1]:sub(1, 6))
    return { kind = "code_review", label = label,
      content = got.llm, review = { ids = got.ids, shown = got.shown } }
  end
end

-- The message's `#{code_review}` worded as the phrase, when it sends comments.
---@param text string
---@param items table[] what goes with the message
---@return string
function M.replace(text, items)
  for _, item in ipairs(items) do
    if item.review then
      local phrase = options.get("interactions.shared.editor_context.code_review.opts.replacement_message")
        or options.get("interactions.shared.editor_context.code_review.opts.replacement") or REPLACEMENT
      return (text:gsub("#{code_review}", function() return phrase end))
    end
  end
  return text
end

-- The message went (a chat's, or a CLI agent's): its comments leave the pending ones, the
-- baseline advances; a chat shows what was sent (where and what, without the code).
---@param items table[]
---@param chat? CodeCompanionChat
function M.sent(items, chat)
  for _, item in ipairs(items) do
    if item.review then
      if chat then -- before the engine is waited on: its reply may come meanwhile
        require("codecompanion_py.chat.buffer").show(chat, "````markdown\n" .. item.review.shown .. "\n````")
      end
      request("review.consume", { ids = item.review.ids })
    end
  end
end

-- A tool or agent wrote `path`: it is in the review's default scope.
---@param path string
function M.edited(path)
  if M.enabled() then
    pcall(require("codecompanion_py.rpc").notify, "review.track", { cwd = vim.fn.getcwd(), path = path,
      dir = vim.fn.expand(opt("opts.storage_dir")) })
  end
end

-- A CLI agent was sent a prompt: the baseline is taken unless there is one.
---@return nil
function M.agent_starts()
  if M.enabled() then
    pcall(require("codecompanion_py.rpc").notify, "review.baseline", { cwd = vim.fn.getcwd() })
  end
end

local SUBCOMMANDS = {
  accept = actions.accept,
  ignore = actions.ignore,
  all = function() M.open("all") end,
  approve = M.approve,
  start = M.approve,
  share = M.share,
  comments = M.edit_comments,
}

-- `require("codecompanion").code_review(args)` and the command: args.subcommand (any case),
-- and a command's range for `comment`.
---@param args? { subcommand?: string, range?: integer, line1?: integer, line2?: integer }
function M.run(args)
  args = args or {}
  if not M.enabled() then
    return notify("code review is off (interactions.code_review.enabled = false)", vim.log.levels.WARN)
  end
  local sub = (args.subcommand or ""):lower()
  if sub == "comment" then
    return M.comment(args)
  elseif sub == "" then
    return M.open()
  elseif SUBCOMMANDS[sub] then
    return SUBCOMMANDS[sub]()
  end
  notify(("unknown subcommand %q: %s"):format(args.subcommand, table.concat(M.SUBCOMMAND_NAMES, ", ")),
    vim.log.levels.WARN)
end

M.SUBCOMMAND_NAMES = { "Accept", "All", "Approve", "Comment", "Comments", "Ignore", "Share", "Start" }

return M
