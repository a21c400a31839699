-- :CodeCompanionActions, the action palette: a new chat, the open chats, a chat with rules,
-- and the prompt library (prompts and workflows that fit the mode: a visual selection or
-- not), through the picker (`display.action_palette.provider`, else as pickers.lua finds
-- one). `:CodeCompanionActions Refresh` reads the markdown prompts again.
local api = vim.api
local prompts = require("codecompanion_py.prompts")
local words = require("codecompanion_py.words")

local M = {}

local function palette()
  return require("codecompanion_py.options").get("display.action_palette") or {}
end

local function presets(context)
  local chat = require("codecompanion_py.chat")
  local entries = {
    { name = "Chat", description = "Open a new chat", run = function() chat.open({}) end },
  }
  local open = vim.tbl_values(chat.chats)
  if #open > 0 then
    table.insert(entries, {
      name = "Open chats ...",
      description = words.count(#open, "open chat"),
      run = function()
        table.sort(open, function(a, b) return a.bufnr < b.bufnr end)
        require("codecompanion_py.pickers").select(open, {
          prompt = "Open chats",
          format_item = function(c)
            return ("%s (%s)"):format(api.nvim_buf_get_name(c.bufnr):match("[^/]*$"), c.adapter.name or "?")
          end,
        }, function(c) if c then chat.show_chat(c) end end, palette().provider)
      end,
    })
  end
  if (palette().opts or {}).show_preset_rules ~= false then
    table.insert(entries, {
      name = "Chat with rules ...",
      description = "Open a new chat with a rule group",
      run = function()
        local groups = require("codecompanion_py.chat.rules").groups(require("codecompanion_py").config or {})
        local names = vim.tbl_keys(groups)
        table.sort(names)
        require("codecompanion_py.pickers").select(names, { prompt = "Rules" }, function(name)
          if name then
            chat.load_rules(chat.open({ context = { bufnr = context.bufnr } }), { name })
          end
        end, palette().provider)
      end,
    })
  end
  return entries
end

-- The palette's entries for `context` (prompts.context): presets, then the library's.
---@param context table
---@return table[]
function M.entries(context)
  local entries = (palette().opts or {}).show_preset_actions ~= false and presets(context) or {}
  for _, item in ipairs(prompts.items()) do
    if prompts.fits(item, context) then
      local workflow = item.opts.is_workflow or item.interaction == "workflow"
      table.insert(entries, {
        name = item.name .. (workflow and " (workflow)" or ""),
        description = item.description or "",
        item = item,
        run = function() require("codecompanion_py.prompts.run").run(item, context) end,
      })
    end
  end
  return entries
end

---@param cmd? { args?: string, range?: integer, line1?: integer, line2?: integer }
function M.open(cmd)
  cmd = cmd or {}
  if vim.trim(cmd.args or "") == "Refresh" then
    local items = prompts.items(true)
    return vim.notify("CodeCompanion: the prompt library has " .. words.count(#items, "prompt"))
  end
  local ranged = (cmd.range or 0) > 0
  local context = prompts.context(api.nvim_get_current_buf(), ranged and cmd.line1 or nil, ranged and cmd.line2 or nil,
    ranged)
  local entries = M.entries(context)
  require("codecompanion_py.pickers").select(entries, {
    prompt = palette().prompt or "CodeCompanion actions",
    format_item = function(entry)
      return entry.description ~= "" and (entry.name .. "  " .. entry.description) or entry.name
    end,
  }, function(entry)
    if entry then
      entry.run()
    end
  end, palette().provider)
end

return M
