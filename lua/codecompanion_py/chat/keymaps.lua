-- The chat buffer's keymaps, by CodeCompanion's names, keys and descriptions.
-- `interactions.chat.keymaps` (or `strategies.chat.keymaps`) changes them as in CodeCompanion:
--   send = { modes = { n = "<C-s>", i = "<C-s>" }, opts = {} }   -- other keys (opts: map-arguments)
--   close = false                                                -- no keymap
--   mine = { modes = { n = "gz" }, callback = function(chat) ... end, description = "..." }
-- A `callback` is a built-in's name ("keymaps.send") or a function called with the chat.
local M = {}
local api = vim.api

-- name = { modes, callback, description }; the order is the order of `?`.
M.DEFAULTS = {
  options = { modes = { n = "?" }, callback = "keymaps.options", description = "Options" },
  completion = { modes = { i = "<C-_>" }, callback = "keymaps.completion", description = "Open the completion menu" },
  send = { modes = { n = { "<CR>", "<C-s>" }, i = "<C-s>" }, callback = "keymaps.send",
    description = "Send the message to the LLM" },
  regenerate = { modes = { n = "gr" }, callback = "keymaps.regenerate",
    description = "Regenerate the last response" },
  close = { modes = { n = "<C-c>", i = "<C-c>" }, callback = "keymaps.close", description = "Close the chat buffer" },
  stop = { modes = { n = "q" }, callback = "keymaps.stop", description = "Stop the current request" },
  clear = { modes = { n = "gx" }, callback = "keymaps.clear", description = "Clear all messages from the chat" },
  codeblock = { modes = { n = "gc" }, callback = "keymaps.codeblock", description = "Insert an empty codeblock" },
  yank_code = { modes = { n = "gy" }, callback = "keymaps.yank_code",
    description = "Yank code from the last codeblock" },
  next_chat = { modes = { n = "}" }, callback = "keymaps.next_chat", description = "Open the next chat" },
  previous_chat = { modes = { n = "{" }, callback = "keymaps.previous_chat", description = "Open the previous chat" },
  next_header = { modes = { n = "]]" }, callback = "keymaps.next_header", description = "Jump to the next header" },
  previous_header = { modes = { n = "[[" }, callback = "keymaps.previous_header",
    description = "Jump to the previous header" },
  change_adapter = { modes = { n = "ga" }, callback = "keymaps.change_adapter",
    description = "Change adapter and model" },
  fold_code = { modes = { n = "gf" }, callback = "keymaps.fold_code", description = "Fold all codeblocks" },
  debug = { modes = { n = "gd" }, callback = "keymaps.debug", description = "Show debug info for the chat" },
  system_prompt = { modes = { n = "gs" }, callback = "keymaps.toggle_system_prompt",
    description = "Toggle the system prompt on/off" },
  clear_approvals = { modes = { n = "gtx" }, callback = "keymaps.clear_approvals",
    description = "Reset cached tool approvals" },
  yolo_mode = { modes = { n = "gty" }, callback = "keymaps.yolo_mode",
    description = "Toggle YOLO/auto-approval of tool calls" },
  auto_tool_mode = { modes = { n = "gta" }, callback = "keymaps.yolo_mode",
    description = "Toggle YOLO/auto-approval of tool calls (its name before v18)" },
  buffer_sync_all = { modes = { n = "gba" }, callback = "keymaps.buffer_sync_all",
    description = "Send the whole buffer on every turn it changed" },
  buffer_sync_diff = { modes = { n = "gbd" }, callback = "keymaps.buffer_sync_diff",
    description = "Send the buffer's changes on every turn" },
  rules = { modes = { n = "gM" }, callback = "keymaps.clear_rules", description = "Remove rules from the chat" },
  goto_file_under_cursor = { modes = { n = "gR" }, callback = "keymaps.goto_file_under_cursor",
    description = "Open the file path under the cursor" },
  -- this plugin's own, for coding agents (CodeCompanion has /mode and /resume for these)
  acp_options = { modes = { n = "gao" }, callback = "keymaps.acp_options",
    description = "Pick the agent's mode, model or another option" },
  acp_resume = { modes = { n = "gas" }, callback = "keymaps.acp_resume",
    description = "Resume an earlier session of the agent" },
}

M.ORDER = { "options", "completion", "send", "regenerate", "close", "stop", "clear", "codeblock", "yank_code",
  "next_chat", "previous_chat", "next_header", "previous_header", "change_adapter", "fold_code", "debug",
  "system_prompt", "buffer_sync_all", "buffer_sync_diff", "rules", "clear_approvals", "yolo_mode", "auto_tool_mode",
  "goto_file_under_cursor", "acp_options",
  "acp_resume" }

-- The user's keymaps table: the newer spelling wins, entry by entry.
local function user_keymaps(config)
  local out = {}
  for _, key in ipairs({ "strategies", "interactions" }) do
    local chat = type(config[key]) == "table" and config[key].chat or nil
    if type(chat) == "table" and type(chat.keymaps) == "table" then
      for name, map in pairs(chat.keymaps) do
        out[name] = map
      end
    end
  end
  return out
end

-- The keymaps in effect: { name, modes, callback, description, opts } in `?` order.
function M.resolve(config)
  local user = user_keymaps(config)
  local names = vim.list_extend({}, M.ORDER)
  local extra = {}
  for name in pairs(user) do
    if not M.DEFAULTS[name] then
      table.insert(extra, name)
    end
  end
  table.sort(extra)
  vim.list_extend(names, extra)
  local out = {}
  for _, name in ipairs(names) do
    local map = user[name]
    if map ~= false then
      if type(map) == "table" then
        map = vim.tbl_deep_extend("force", vim.deepcopy(M.DEFAULTS[name] or {}), map)
      else -- a default as it is (its tables are only read)
        local copy = {}
        for key, value in pairs(M.DEFAULTS[name]) do
          copy[key] = value
        end
        map = copy
      end
      if type(map.modes) == "table" and map.callback ~= nil then
        map.name = name
        table.insert(out, map)
      end
    end
  end
  return out
end

local function keys_of(value)
  if type(value) == "string" then
    return { value }
  end
  return type(value) == "table" and value or {}
end

-- Map the keymaps in the chat's buffer; `actions[name]` runs a built-in with the chat.
function M.set(chat, config, actions)
  for _, map in ipairs(M.resolve(config)) do
    local callback = map.callback
    local run
    if type(callback) == "function" then
      run = function() callback(chat) end
    elseif type(callback) == "string" and actions[callback:gsub("^keymaps%.", "")] then
      local action = actions[callback:gsub("^keymaps%.", "")]
      run = function() action(chat) end
    else
      vim.notify(("CodeCompanion: keymaps.%s has an unknown callback %s"):format(map.name, vim.inspect(callback)),
        vim.log.levels.WARN)
    end
    if run then
      local opts = { nowait = true, desc = map.description }
      if type(map.opts) == "table" then -- the user's map-arguments, as vim.keymap.set reads them
        opts = vim.tbl_extend("force", opts, map.opts, { buffer = chat.bufnr })
        opts.chat = nil -- CodeCompanion's own option (action palette), not a map-argument
      else -- straight to the API: vim.keymap.set's checks cost three times the mapping (29 maps a chat)
        opts.noremap, opts.callback = true, run
      end
      for mode, lhs in pairs(map.modes) do
        for _, key in ipairs(keys_of(lhs)) do
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

return M
