-- The prompt library, CodeCompanion's: prompts as Lua tables in `prompt_library` and as
-- markdown files (front matter, then `## system` / `## user` sections) in this plugin's
-- builtins and in `prompt_library.markdown.dirs` (nested and symlinked folders too).
--
-- An item: { name, interaction = "chat" | "inline" | "workflow", description, opts = {
-- alias, auto_submit, modes, placement, adapter, ignore_system_prompt, is_slash_cmd,
-- is_workflow, user_prompt, max_repeats, enabled }, prompts, tools, rules, condition }.
-- `prompts` is a list of { role, content, condition?, opts? }, or for a workflow a list of
-- such lists, one per step (a step may have `repeat_until`). Contents are strings with
-- placeholders, or functions of the context:
--   ${context.code} ${context.filetype} ${context.bufnr} ${context.start_line} ...
--   ${name.fn}  a value or function of `name.lua` beside the markdown file
--
-- A folder of `markdown.dirs` inside the project (`.prompts`) comes with the repository: its
-- prompts load only once the user trusts the project (prompts/trust.lua asks, once), and
-- they never take an alias another prompt has (/explain stays the built-in's).
local yaml = require("codecompanion_py.prompts.yaml")
local trust = require("codecompanion_py.prompts.trust")
local options = require("codecompanion_py.options")

local M = {}

M.BUILTINS = vim.fs.joinpath(vim.fn.fnamemodify(debug.getinfo(1, "S").source:gsub("^@", ""), ":p:h"), "builtins")

local cache ---@type table[]? every item, loaded once (`:CodeCompanionActions Refresh` reloads)
local cache_cwd ---@type string? the working directory the cache was made in: its project's prompts
M.problems = {} ---@type string[] files that could not be read, said once per load
M.MAX_FRONT_MATTER = 64000 -- bytes: a prompt's options, not a document

-- A markdown prompt: front matter, then sections headed `## system` / `## user`; a section
-- that starts with a ```yaml opts block has those options.
function M.parse_markdown(text, path)
  local front, body = text:match("^%-%-%-\r?\n(.-)\r?\n%-%-%-\r?\n(.*)$")
  if not front then
    return nil, "it has no front matter between --- lines"
  end
  if #front > M.MAX_FRONT_MATTER then
    return nil, ("its front matter is larger than %d KB"):format(M.MAX_FRONT_MATTER / 1000)
  end
  local ok, meta = pcall(yaml.decode, front)
  if not ok then
    return nil, "front matter: " .. tostring(meta)
  end
  if type(meta) ~= "table" or type(meta.name) ~= "string" then
    return nil, "the front matter needs a name"
  end
  local sections = {}
  local current
  local fenced = false
  for line in (body .. "\n"):gmatch("(.-)\r?\n") do
    if line:match("^```") or line:match("^~~~") then
      fenced = not fenced
    end
    local role = not fenced and line:match("^##%s+(%a+)%s*$")
    if role and (role:lower() == "system" or role:lower() == "user") then
      current = { role = role:lower(), lines = {} }
      table.insert(sections, current)
    elseif current then
      table.insert(current.lines, line)
    end
  end
  local prompts = {}
  for _, section in ipairs(sections) do
    local content = vim.trim(table.concat(section.lines, "\n"))
    local opts
    local block, rest = content:match("^```yaml opts\r?\n(.-)\r?\n```%s*(.*)$")
    if block then
      local parsed, decoded = pcall(yaml.decode, block)
      if not parsed then
        return nil, "a section's opts: " .. tostring(decoded)
      end
      opts, content = decoded, rest
    end
    table.insert(prompts, { role = section.role, content = content, opts = opts })
  end
  local item = meta
  item.opts = type(item.opts) == "table" and item.opts or {}
  item.dir = path and vim.fs.dirname(path) or nil
  item.path = path
  item.interaction = item.interaction or item.strategy or "chat"
  if item.interaction == "workflow" or item.opts.is_workflow then -- each user section is a step
    local steps, system = {}, {}
    for _, prompt in ipairs(prompts) do
      if prompt.role == "system" then
        table.insert(system, prompt)
      else
        table.insert(steps, vim.list_extend(vim.deepcopy(system), { prompt }))
        system = {}
      end
    end
    item.prompts, item.opts.is_workflow = steps, true
  else
    item.prompts = prompts
  end
  return item
end

local files = require("codecompanion_py.files")

-- The markdown prompts under `dir`: this plugin's built-ins are read here, every other
-- folder's files by the engine (files.lua), all in one request.
local function markdown_items(dir, source, items, root)
  local paths = files.find(vim.fn.fnamemodify(vim.fn.expand(dir), ":p"), ".md")
  local texts, failed
  if source == "builtin" then
    texts = vim.tbl_map(function(path)
      local content, why = files.read_own(path)
      return { content = content, error = why }
    end, paths)
  else
    texts, failed = files.read_many(paths)
  end
  if not texts then
    return table.insert(M.problems, ("%s: %s"):format(vim.fn.fnamemodify(dir, ":~"), failed))
  end
  for i, path in ipairs(paths) do
    local text, why = (texts[i] or {}).content, (texts[i] or {}).error
    local item
    if text then
      item, why = M.parse_markdown(text, path)
    end
    if item then
      item.source, item.root = source, root
      table.insert(items, item)
    else
      table.insert(M.problems, ("%s: %s"):format(vim.fn.fnamemodify(path, ":~"), why or "cannot be read"))
    end
  end
end

-- A project prompt whose alias another prompt has keeps its place in the palette, not the alias.
local function unshadow(items)
  local taken = {}
  for _, item in ipairs(items) do
    if item.source ~= "project" and type(item.opts.alias) == "string" then
      taken[item.opts.alias] = taken[item.opts.alias] or item
    end
  end
  for _, item in ipairs(items) do
    local owner = item.source == "project" and taken[item.opts.alias]
    if owner then
      table.insert(M.problems, ("%s: /%s is already %q's alias, which keeps it"):format(
        vim.fn.fnamemodify(item.path, ":~:."), item.opts.alias, owner.name))
      item.opts.alias = nil
    end
  end
end

-- Every prompt: the built-ins (unless `display.action_palette.opts.show_preset_prompts` is
-- false), the config's, and the markdown directories' (the project's once it is trusted).
-- Items with `opts.enabled = false` are out.
function M.items(refresh)
  local cwd = vim.fn.getcwd()
  if cache and not refresh and cache_cwd == cwd then
    return cache
  end
  cache_cwd = cwd
  M.problems = {}
  local items = {}
  local library = options.get("prompt_library")
  library = type(library) == "table" and library or {}
  local palette = options.get("display.action_palette.opts") or {}
  if palette.show_preset_prompts ~= false then
    markdown_items(M.BUILTINS, "builtin", items)
  end
  for name, item in pairs(library) do
    if name ~= "markdown" and name ~= "opts" and type(item) == "table" then
      item = vim.deepcopy(item)
      item.name = item.name or name
      item.opts = item.opts or {}
      item.interaction = item.interaction or item.strategy or "chat"
      item.source = "config"
      table.insert(items, item)
    end
  end
  local root = trust.project()
  local untrusted = false
  for _, dir in ipairs(vim.tbl_get(library, "markdown", "dirs") or {}) do
    if not trust.in_project(dir, root) then
      markdown_items(dir, "markdown", items)
    elseif trust.state(root) == true then
      markdown_items(dir, "project", items, root)
    else
      untrusted = untrusted or (trust.state(root) == nil and #files.find(vim.fn.fnamemodify(vim.fn.expand(dir), ":p"),
        ".md") > 0)
    end
  end
  unshadow(items)
  if untrusted then -- asked once the caller is done; a yes loads them
    trust.ask(root, function() M.items(true) end)
  end
  if #M.problems > 0 then
    vim.notify("CodeCompanion: prompt library: " .. table.concat(M.problems, "; "), vim.log.levels.WARN)
  end
  cache = vim.tbl_filter(function(item) return item.opts.enabled ~= false end, items)
  table.sort(cache, function(a, b) return a.name < b.name end)
  return cache
end

function M.find(alias)
  for _, item in ipairs(M.items()) do
    if item.opts.alias == alias then
      return item
    end
  end
end

-- The context placeholders see: the buffer the user works in and its selection (or cursor).
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

-- `${context.x}` and `${file.fn}` in `text`.
function M.expand(text, item, context)
  return (text:gsub("%${([%w_]+)%.([%w_]+)}", function(scope, key)
    if scope == "context" then
      local value = context[key]
      return value ~= nil and tostring(value) or ""
    end
    local runs = item.dir and (item.source ~= "project" or trust.state(item.root) == true) -- never untrusted code
    local helpers = runs and loadfile(vim.fs.joinpath(item.dir, scope .. ".lua"))
    local ok, module = pcall(helpers or function() end)
    local value = ok and type(module) == "table" and module[key] or nil
    if type(value) == "function" then
      local called, result = pcall(value, { context = context, item = item })
      value = called and result or ("[" .. scope .. "." .. key .. " failed: " .. tostring(result) .. "]")
    end
    return value ~= nil and tostring(value) or ("${" .. scope .. "." .. key .. "}")
  end))
end

-- The messages of a prompt list for `context`: { role, content } with conditions applied.
function M.messages(item, prompts, context)
  local out = {}
  for _, prompt in ipairs(prompts or {}) do
    local keep = prompt.condition == nil or (type(prompt.condition) == "function" and prompt.condition(context))
    if keep then
      local content = prompt.content
      if type(content) == "function" then
        content = content(context)
      end
      if type(content) == "string" and content ~= "" then
        table.insert(out, { role = prompt.role or "user", content = M.expand(content, item, context),
          opts = prompt.opts })
      end
    end
  end
  return out
end

-- An item fits where the user is: its `opts.modes` (e.g. { "v" }) and `condition`.
function M.fits(item, context)
  local modes = item.opts.modes
  if type(modes) == "table" and #modes > 0 then
    local mode = context.is_visual and "v" or "n"
    if not vim.tbl_contains(modes, mode) then
      return false
    end
  end
  if type(item.condition) == "function" then
    local ok, fits = pcall(item.condition, context)
    return ok and fits ~= false
  end
  return true
end

return M
