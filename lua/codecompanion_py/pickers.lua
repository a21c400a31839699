-- Pickers for the slash commands, chosen as CodeCompanion chooses them: a command's
-- `opts.provider` ("telescope", "fzf_lua", "mini_pick", "snacks" or "default"), else the
-- first of those installed, else vim.ui.select. Each takes vim.ui.select's arguments:
-- `select(items, { prompt, format_item }, on_choice)`, on_choice(item, index) or nil.
local M = {}

M.ORDER = { "telescope", "fzf_lua", "mini_pick", "snacks" }
local MODULES = { telescope = "telescope", fzf_lua = "fzf-lua", mini_pick = "mini.pick", snacks = "snacks" }

local function format(opts, item)
  return opts.format_item and opts.format_item(item) or tostring(item)
end

local function telescope(items, opts, on_choice)
  local actions, state = require("telescope.actions"), require("telescope.actions.state")
  local chosen = false
  require("telescope.pickers").new({}, {
    prompt_title = opts.prompt,
    finder = require("telescope.finders").new_table({
      results = items,
      entry_maker = function(item)
        local text = format(opts, item)
        return { value = item, display = text, ordinal = text }
      end,
    }),
    sorter = require("telescope.config").values.generic_sorter({}),
    attach_mappings = function(prompt_bufnr)
      actions.select_default:replace(function()
        local entry = state.get_selected_entry()
        chosen = true
        actions.close(prompt_bufnr)
        on_choice(entry and entry.value, entry and entry.index) -- nil, nil: nothing was chosen
      end)
      actions.close:enhance({ post = function() if not chosen then on_choice(nil, nil) end end })
      return true
    end,
  }):find()
end

local SELECT = {
  default = function(items, opts, on_choice) vim.ui.select(items, opts, on_choice) end,
  telescope = telescope,
  fzf_lua = function(...) require("fzf-lua.providers.ui_select").ui_select(...) end,
  mini_pick = function(items, opts, on_choice) require("mini.pick").ui_select(items, opts, on_choice) end,
  snacks = function(items, opts, on_choice) require("snacks").picker.select(items, opts, on_choice) end,
}

local function installed(name)
  return (pcall(require, MODULES[name]))
end

local told = {} -- pickers named in the config but not installed: said once a session

-- The provider for `wanted` (a name, or nil to find one).
---@param wanted? string
---@return string
function M.provider(wanted)
  if wanted == "default" or (wanted and SELECT[wanted] and installed(wanted)) then
    return wanted
  end
  if wanted and SELECT[wanted] then
    if not told[wanted] then
      told[wanted] = true
      vim.notify(('CodeCompanion: provider "%s" is not installed: using the default picker'):format(wanted),
        vim.log.levels.WARN)
    end
    return "default"
  end
  for _, name in ipairs(M.ORDER) do
    if installed(name) then return name end
  end
  return "default"
end

-- vim.ui.select through the picker `wanted` (or the first installed).
---@param items any[]
---@param opts table vim.ui.select's
---@param on_choice fun(item: any, index?: integer)
---@param wanted? string
function M.select(items, opts, on_choice, wanted)
  local name = M.provider(wanted)
  local ok, err = pcall(SELECT[name], items, opts, on_choice)
  if not ok then -- a picker's own error: the choice still happens, in vim.ui.select
    vim.notify(("CodeCompanion: the %s picker failed (%s); using vim.ui.select"):format(name, err),
      vim.log.levels.WARN)
    vim.ui.select(items, opts, on_choice)
  end
end

return M
