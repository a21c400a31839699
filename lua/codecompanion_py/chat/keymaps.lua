-- The chat buffer's keymaps, by CodeCompanion's names, keys and descriptions, and `?`.
-- `interactions.chat.keymaps` (or `strategies.chat.keymaps`) changes them as in CodeCompanion:
--   send = { modes = { n = "<C-s>", i = "<C-s>" }, opts = {} }   -- other keys (opts: map-arguments)
--   close = false                                                -- no keymap
--   mine = { modes = { n = "gq" }, callback = function(chat) ... end, description = "..." }
-- A `callback` is a built-in's name ("keymaps.send", chat/actions.lua) or a function called with the chat.
local api = vim.api

local M = {}

---@class CodeCompanionKeymap
---@field name string
---@field modes table<string, string|string[]>
---@field callback string|fun(chat: CodeCompanionChat)
---@field description? string
---@field opts? table

---@type table<string, CodeCompanionKeymap> by name
local DEFAULTS = {}
local ORDER = {} -- the order of `?`
-- name, modes, the built-in "keymaps.<action>", description, and "http" or "acp" when `?` lists it
-- only in that kind of chat (the engine refuses the others there: an agent keeps its own history)
for _, row in ipairs({
  { "options", { n = "?" }, "options", "Options" },
  { "completion", { i = "<C-_>" }, "completion", "Open the completion menu" },
  { "send", { n = { "<CR>", "<C-s>" }, i = "<C-s>" }, "send", "Send the message to the LLM" },
  { "regenerate", { n = "gr" }, "regenerate", "Regenerate the last response", "http" },
  { "close", { n = "<C-c>", i = "<C-c>" }, "close", "Close the chat buffer" },
  { "stop", { n = "q" }, "stop", "Stop the current request" },
  { "_btw", { n = "gm" }, "btw", "Send a follow-up while streaming" },
  { "clear", { n = "gx" }, "clear", "Clear all messages from the chat" },
  { "rewind", { n = "gz" }, "rewind", "Rewind to before this message (its files, the conversation or both)" },
  { "codeblock", { n = "gc" }, "codeblock", "Insert an empty codeblock" },
  { "yank_code", { n = "gy" }, "yank_code", "Yank code from the last codeblock" },
  { "next_chat", { n = "}" }, "next_chat", "Open the next chat" },
  { "previous_chat", { n = "{" }, "previous_chat", "Open the previous chat" },
  { "next_header", { n = "]]" }, "next_header", "Jump to the next header" },
  { "previous_header", { n = "[[" }, "previous_header", "Jump to the previous header" },
  { "change_adapter", { n = "ga" }, "change_adapter", "Change adapter and model" },
  { "fold_code", { n = "gf" }, "fold_code", "Fold all codeblocks" },
  { "debug", { n = "gd" }, "debug", "Show debug info for the chat" },
  { "system_prompt", { n = "gs" }, "toggle_system_prompt", "Toggle the system prompt on/off", "http" },
  { "buffer_sync_all", { n = "gba" }, "buffer_sync_all", "Send the whole buffer on every turn it changed" },
  { "buffer_sync_diff", { n = "gbd" }, "buffer_sync_diff", "Send the buffer's changes on every turn" },
  { "rules", { n = "gM" }, "clear_rules", "Remove rules from the chat" },
  { "clear_approvals", { n = "gtx" }, "clear_approvals", "Reset cached tool approvals" },
  { "yolo_mode", { n = "gty" }, "yolo_mode", "Toggle YOLO/auto-approval of tool calls" },
  { "auto_tool_mode", { n = "gta" }, "yolo_mode", "Toggle YOLO/auto-approval of tool calls (its name before v18)" },
  { "goto_file_under_cursor", { n = "gR" }, "goto_file_under_cursor", "Open the file path under the cursor" },
  { "copilot_stats", { n = "gS" }, "copilot_stats", "Show Copilot usage statistics", "http" },
  -- this plugin's own, for coding agents (CodeCompanion has /mode and /resume for these)
  { "acp_options", { n = "gao" }, "acp_options", "Pick the agent's mode, model or another option", "acp" },
  { "acp_resume", { n = "gas" }, "acp_resume", "Resume an earlier session of the agent", "acp" },
}) do
  DEFAULTS[row[1]] = { modes = row[2], callback = "keymaps." .. row[3], description = row[4], only = row[5] }
  table.insert(ORDER, row[1])
end

-- The user's `interactions.<section>.keymaps` (or `strategies.<section>`): the newer
-- spelling wins, entry by entry.
---@param config table the plugin's config
---@param section "chat"|"shared"|"inline"
---@return table<string, table|false>
function M.user(config, section)
  local out = {}
  for _, key in ipairs({ "strategies", "interactions" }) do
    local part = type(config[key]) == "table" and config[key][section] or nil
    for name, map in pairs(type(part) == "table" and type(part.keymaps) == "table" and part.keymaps or {}) do
      out[name] = map
    end
  end
  return out
end

-- The keymaps in effect, in `?` order.
---@param config table the plugin's config
---@return CodeCompanionKeymap[]
function M.resolve(config)
  local user = M.user(config, "chat")
  local extra = vim.tbl_filter(function(name) return not DEFAULTS[name] end, vim.tbl_keys(user))
  table.sort(extra)
  local out = {}
  for _, name in ipairs(vim.list_extend(vim.list_extend({}, ORDER), extra)) do
    local map = user[name]
    if map ~= false then
      -- a default as it is is copied shallowly: its tables are only read
      map = type(map) == "table" and vim.tbl_deep_extend("force", vim.deepcopy(DEFAULTS[name] or {}), map)
        or vim.tbl_extend("force", {}, DEFAULTS[name])
      if type(map.modes) == "table" and map.callback ~= nil then
        map.name = name
        table.insert(out, map)
      end
    end
  end
  return out
end

-- Map the keymaps in the chat's buffer; `actions[name]` runs a built-in with the chat.
---@param chat CodeCompanionChat
---@param config table the plugin's config
---@param actions table<string, fun(chat: CodeCompanionChat)>
function M.set(chat, config, actions)
  for _, map in ipairs(M.resolve(config)) do
    local callback = map.callback
    local action = type(callback) == "function" and callback
      or type(callback) == "string" and actions[callback:gsub("^keymaps%.", "")]
    if not action then
      vim.notify(("CodeCompanion: keymaps.%s has an unknown callback %s"):format(map.name, vim.inspect(callback)),
        vim.log.levels.WARN)
    else
      local function run()
        local ok, err = pcall(action, chat)
        if not ok then -- one line naming what it used (an extension's map may reach past this plugin)
          require("codecompanion_py.extensions").report("keymaps." .. map.name .. " failed", err)
        end
      end
      local opts = { nowait = true, desc = map.description }
      if type(map.opts) == "table" then -- the user's map-arguments, as vim.keymap.set reads them
        opts = vim.tbl_extend("force", opts, map.opts, { buffer = chat.bufnr })
        opts.chat = nil -- CodeCompanion's own option (action palette), not a map-argument
      else -- straight to the API: vim.keymap.set's checks cost three times the mapping (29 maps a chat)
        opts.noremap, opts.callback = true, run
      end
      for mode, lhs in pairs(map.modes) do
        for _, key in ipairs(type(lhs) == "table" and lhs or { lhs }) do
          if opts.callback then
            api.nvim_buf_set_keymap(chat.bufnr, mode, key, "", opts)
          else
            vim.keymap.set(mode, key, run, opts)
          end
        end
      end
    end
  end
end

local MODE_NAMES = { n = "normal", i = "insert", v = "visual", x = "visual", s = "select", o = "operator",
  t = "terminal" }

-- `?`: the chat's keymaps as configured, one line each: the keys, the description and,
-- when not normal mode only, the modes; in a chat of `kind` ("http", "acp"), not the other kind's.
---@param config table the plugin's config
---@param kind? string
---@return string[]
function M.lines(config, kind)
  local rows, width = {}, 0
  for _, map in ipairs(M.resolve(config)) do
    local keys, modes = {}, {}
    local mode_order = vim.tbl_keys(map.modes)
    table.sort(mode_order, function(a, b) return (a == "n" and "" or a) < (b == "n" and "" or b) end)
    for _, mode in ipairs(mode_order) do
      local lhs = map.modes[mode]
      table.insert(modes, MODE_NAMES[mode] or mode)
      for _, key in ipairs(type(lhs) == "table" and lhs or { lhs }) do
        if not vim.tbl_contains(keys, key) then
          table.insert(keys, key)
        end
      end
    end
    table.sort(modes)
    if #keys > 0 and not (kind and map.only and map.only ~= kind) then
      local row = { keys = table.concat(keys, " "), desc = map.description or map.name,
        modes = table.concat(modes, ", ") }
      width = math.max(width, vim.fn.strdisplaywidth(row.keys))
      table.insert(rows, row)
    end
  end
  return vim.tbl_map(function(row)
    local pad = string.rep(" ", width - vim.fn.strdisplaywidth(row.keys))
    local where = row.modes == "normal" and "" or (" (" .. row.modes .. ")")
    return (" %s%s  %s%s"):format(row.keys, pad, row.desc, where)
  end, rows)
end

-- `?`: the chat's keymaps in a floating window; q, <Esc> or ? closes it.
---@param kind? string the chat's ("http", "acp")
---@return integer win
function M.show(kind)
  local lines = M.lines(require("codecompanion_py").config, kind)
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  return require("codecompanion_py.chat.float").open(lines, {
    title = " Chat keymaps ", minimal = true, keys = { "q", "<Esc>", "?" }, close_on_leave = true,
    width = math.min(width + 2, math.max(10, vim.o.columns - 4)),
    height = math.min(#lines, math.max(1, vim.o.lines - 4)),
  })
end

return M
