-- The prompt library, CodeCompanion's: prompts as Lua tables in `prompt_library`, and
-- markdown prompts in this plugin's builtins and in `prompt_library.markdown.dirs`, which the
-- engine finds, reads and parses (`prompts.read`, codecompanion_py/prompt_library.py). What
-- runs Lua stays here: `condition` functions, placeholders against the editor's context:
--   ${context.code} ${context.filetype} ${context.buffer_name} ${context.start_line} ...
--   ${name.fn}  a value or function of `name.lua` beside the markdown file
-- A folder of `markdown.dirs` inside the project (`.prompts`) comes with the repository: its
-- prompts load only once the user trusts the project (prompts/trust.lua asks, once), and
-- they never take an alias another prompt has (/explain stays the built-in's).

---@class codecompanion_py.PromptMessage
---@field role "system"|"user"
---@field content string|fun(context: table): string placeholders expanded by M.expand
---@field condition? fun(context: table): boolean
---@field opts? table a markdown section's ```yaml opts block
---@field repeat_until? fun(state: table): boolean a workflow step's

---@class codecompanion_py.PromptItem
---@field name string
---@field interaction "chat"|"inline"|"workflow"
---@field description? string
---@field opts table alias, auto_submit, modes, placement, adapter, ignore_system_prompt, is_slash_cmd,
---  is_workflow, user_prompt, max_repeats, enabled
---@field prompts codecompanion_py.PromptMessage[]|codecompanion_py.PromptMessage[][] a workflow: one list per step
---@field tools? string[]|"none"
---@field rules? string[] rule groups its chat loads
---@field context? { type: "file"|"symbols"|"url", path?: string|string[], url?: string|string[] }[]
---@field mcp_servers? string[]|"none" the MCP servers its chat starts with (in place of default_servers)
---@field pre_hook? string|function runs first (a markdown prompt's: `name.fn` of `name.lua` beside it)
---@field condition? fun(context: table): boolean
---@field source "builtin"|"config"|"markdown"|"project"
---@field path? string a markdown prompt's file
---@field dir? string the folder its `name.lua` helpers are in
---@field root? string a project prompt's project
local trust = require("codecompanion_py.prompts.trust")
local options = require("codecompanion_py.options")

local M = {}

M.BUILTINS = vim.fs.joinpath(vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h"), "builtins")

local cache ---@type table[]? every item, loaded once (`:CodeCompanionActions Refresh` reloads)
local cache_cwd ---@type string? the working directory the cache was made in: its project's prompts
M.problems = {} ---@type string[] files that could not be read, said once per load

-- Every prompt: the config's, and the markdown folders' (found and parsed by the engine,
-- codecompanion_py/prompt_library.py). Items with `opts.enabled = false` are out.
---@param refresh boolean? read the folders again
---@return codecompanion_py.PromptItem[]
function M.items(refresh)
  local cwd = vim.fn.getcwd()
  if cache and not refresh and cache_cwd == cwd then
    return cache
  end
  cache_cwd = cwd
  M.problems = {}
  local items, aliases = {}, {}
  local library = options.get("prompt_library")
  library = type(library) == "table" and library or {}
  for name, item in pairs(library) do
    if name ~= "markdown" and name ~= "opts" and type(item) == "table" then
      item = vim.deepcopy(item)
      item.name = item.name or name
      item.opts = item.opts or {}
      item.interaction = item.interaction or item.strategy or "chat"
      item.source = "config"
      table.insert(items, item)
      if type(item.opts.alias) == "string" then
        aliases[item.opts.alias] = aliases[item.opts.alias] or item.name
      end
    end
  end
  local palette = options.get("display.action_palette.opts") or {}
  local ok, answer = pcall(require("codecompanion_py.rpc").request, "prompts.read", {
    cwd = cwd,
    home = vim.uv.os_homedir(),
    trust_file = trust.file(),
    builtins = palette.show_preset_prompts ~= false and M.BUILTINS or nil,
    dirs = vim.tbl_filter(function(dir) return type(dir) == "string" end,
      type(vim.tbl_get(library, "markdown", "dirs")) == "table" and library.markdown.dirs or {}),
    config_aliases = next(aliases) and aliases or vim.empty_dict(),
  })
  if not ok or type(answer) ~= "table" then -- an engine that did not start says so itself
    local why = answer ~= require("codecompanion_py.rpc").GONE and tostring(ok and "no answer" or answer)
    answer = { items = {}, problems = why and { "the prompts were not read: " .. why } or {} }
  end
  vim.list_extend(items, answer.items)
  vim.list_extend(M.problems, answer.problems)
  if type(answer.ask) == "string" then -- a project's folder holds prompts: asked once the caller is done
    trust.ask(answer.ask, function() M.items(true) end)
  end
  if #M.problems > 0 then
    vim.notify("CodeCompanion: prompt library: " .. table.concat(M.problems, "; "), vim.log.levels.WARN)
  end
  cache = vim.tbl_filter(function(item) return item.opts.enabled ~= false end, items)
  table.sort(cache, function(a, b) return a.name < b.name end)
  return cache
end

---@param alias string
---@return codecompanion_py.PromptItem?
function M.find(alias)
  for _, item in ipairs(M.items()) do
    if item.opts.alias == alias then
      return item
    end
  end
end

-- The context placeholders see: the buffer the user works in and its selection (or cursor).
---@param buf integer?
---@param line1 integer?
---@param line2 integer?
---@param visual boolean?
---@return table
function M.context(buf, line1, line2, visual)
  buf = buf or vim.api.nvim_get_current_buf()
  local win = vim.fn.bufwinid(buf)
  local cursor = win ~= -1 and vim.api.nvim_win_get_cursor(win) or { 1, 0 }
  line1, line2 = line1 or cursor[1], line2 or cursor[1]
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  return {
    bufnr = buf,
    buftype = vim.bo[buf].buftype,
    filetype = vim.bo[buf].filetype,
    filename = vim.api.nvim_buf_get_name(buf),
    buffer_name = require("codecompanion_py.words").buffer_name(buf), -- its file, or "buffer N"
    cursor_pos = cursor,
    start_line = line1,
    end_line = line2,
    start_col = 1,
    end_col = #(lines[#lines] or ""),
    lines = lines,
    code = table.concat(lines, "\n"),
    is_visual = visual == true,
    is_normal = visual ~= true,
    mode = visual and "V" or "n",
    winnr = win,
  }
end

-- `fn` of `name.lua` beside a markdown prompt (its `${name.fn}`, its `pre_hook: name.fn`).
---@param item codecompanion_py.PromptItem
---@param name string?
---@param fn string?
---@return any
function M.helper(item, name, fn)
  -- a project's prompts are read only once it is trusted (prompt_library.py): no untrusted code runs
  local ok, module = pcall(item.dir and name and loadfile(vim.fs.joinpath(item.dir, name .. ".lua")) or function() end)
  return ok and type(module) == "table" and module[fn] or nil
end

-- `${context.x}` and `${file.fn}` in `text`; a helper function that fails is named in the
-- text, and its error added to `failed`.
---@param text string
---@param item codecompanion_py.PromptItem
---@param context table
---@param failed? string[]
---@return string
function M.expand(text, item, context, failed)
  return (text:gsub("%${([%w_]+)%.([%w_]+)}", function(scope, key)
    if scope == "context" then
      local value = context[key]
      return value ~= nil and tostring(value) or ""
    end
    local value = M.helper(item, scope, key)
    if type(value) == "function" then
      local called, result = pcall(value, { context = context, item = item })
      if not called then table.insert(failed or {}, tostring(result)) end
      value = called and result or ("[" .. scope .. "." .. key .. " failed: " .. tostring(result) .. "]")
    end
    return value ~= nil and tostring(value) or ("${" .. scope .. "." .. key .. "}")
  end))
end

-- The messages of a prompt list for `context`: { role, content } with conditions applied,
-- and the first error of a helper that failed (the prompt is not worth sending: a helper may
-- fail on purpose, as commit.lua does when nothing is staged).
---@param item codecompanion_py.PromptItem
---@param prompts codecompanion_py.PromptMessage[]?
---@param context table
---@return { role: string, content: string, opts: table? }[]
---@return string? failed
function M.messages(item, prompts, context)
  local out, failed = {}, {}
  for _, prompt in ipairs(prompts or {}) do
    local keep = prompt.condition == nil or (type(prompt.condition) == "function" and prompt.condition(context))
    if keep then
      local content = type(prompt.content) == "function" and prompt.content(context) or prompt.content
      if type(content) == "string" and content ~= "" then
        table.insert(out, { role = prompt.role or "user", content = M.expand(content, item, context, failed),
          opts = prompt.opts })
      end
    end
  end
  return out, failed[1]
end

-- An item fits where the user is: its `opts.modes` (e.g. { "v" }) and `condition`.
---@param item codecompanion_py.PromptItem
---@param context table
---@return boolean
function M.fits(item, context)
  local modes = item.opts.modes
  if type(modes) == "table" and #modes > 0 and not vim.tbl_contains(modes, context.is_visual and "v" or "n") then
    return false
  end
  if type(item.condition) == "function" then
    local ok, fits = pcall(item.condition, context)
    return ok and fits ~= false
  end
  return true
end

return M
