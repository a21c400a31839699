-- Rules files, CodeCompanion's `rules`: groups of files (AGENTS.md, CLAUDE.md, .cursorrules...)
-- whose text goes into a chat as context. `rules.opts.chat.autoload` (default "default")
-- names the groups every new chat loads; `/rules` adds a group to a chat; `gM` removes
-- them all. A file read with the `claude` or `codecompanion` parser brings the files its
-- `@path` lines name (resolved beside it, then in the cwd), five deep; a file met twice is
-- sent once, so an import loop ends. An entry may also be a directory (its files), a glob
-- ("docs/**/*.md"), or a directory with `files` patterns (`{ path = ".", files = { "*.md" } }`),
-- as in CodeCompanion. Lua flattens a group into entries (running its `enabled` functions);
-- the engine finds and reads the files (`rules.read`: codecompanion_py/rules.py, repository.py).
local M = {}

M.DEFAULTS = {
  default = {
    description = "Collection of common files for all projects",
    files = {
      ".clinerules",
      ".cursorrules",
      ".goosehints",
      ".rules",
      ".windsurfrules",
      ".github/copilot-instructions.md",
      "AGENT.md",
      "AGENTS.md",
      { path = "CLAUDE.md", parser = "claude" },
      { path = "CLAUDE.local.md", parser = "claude" },
      { path = "~/.claude/CLAUDE.md", parser = "claude" },
    },
  },
}

local NOT_GROUPS = { opts = true, parsers = true }
local BUILTIN = { claude = true, codecompanion = true, none = true } -- the engine's parsers

local function rules_config(config)
  return type(config.rules) == "table" and config.rules or {}
end

-- Every group: the defaults, with the user's groups over them (a group of the same name replaces it).
---@param config table the plugin's config
---@return table<string, table>
function M.groups(config)
  local groups = vim.deepcopy(M.DEFAULTS)
  local opts = rules_config(config).opts or {}
  if opts.show_presets == false then
    groups = {}
  end
  for name, group in pairs(rules_config(config)) do
    if not NOT_GROUPS[name] and type(group) == "table" then
      groups[name] = group
    end
  end
  return groups
end

local function enabled(value, ...)
  if type(value) == "function" then
    local ok, result = pcall(value, ...)
    return ok and result ~= false
  end
  return value ~= false
end

-- The groups a new chat loads (none when `rules.opts.chat.enabled` is false).
---@param config table the plugin's config
---@param chat table? the chat, for an `enabled` function
---@return string[]
function M.autoload(config, chat)
  local opts = vim.tbl_get(rules_config(config), "opts", "chat") or {}
  if not enabled(opts.enabled, chat) then
    return {}
  end
  local names = opts.autoload
  if names == nil then
    names = "default"
  end
  if type(names) == "function" then
    local ok, result = pcall(names)
    names = ok and result or {}
  end
  return type(names) == "string" and { names } or (type(names) == "table" and names or {})
end

-- The { path, parser, files } entries of a group, its nested groups' included, into `out`.
---@return { path: string, parser: string?, files: string|string[]? }[]
local function entries(group, parser, out)
  if type(group) ~= "table" or not enabled(group.enabled) then
    return out
  end
  parser = group.parser or parser
  local files = group.files or {}
  for _, entry in ipairs(files) do
    if type(entry) == "string" then
      table.insert(out, { path = entry, parser = parser })
    elseif type(entry) == "table" and type(entry.path) == "string" then
      table.insert(out, { path = entry.path, parser = entry.parser or parser, files = entry.files })
    end
  end
  local nested = vim.tbl_filter(function(key) return type(key) == "string" end, vim.tbl_keys(files))
  table.sort(nested)
  for _, key in ipairs(nested) do
    entries(files[key], parser, out)
  end
  return out
end

-- A parser of the user's own (rules.parsers.<name>: a function that returns one, or a Lua file
-- that does, as CodeCompanion resolves them) over a file the engine read: what it returns
-- replaces the file's content and system prompt; its meta.included_files come through the door.
---@return { path: string }[] included
local function parse(config, file, problems)
  local parser = vim.tbl_get(rules_config(config), "parsers", file.parser or "")
  if type(parser) ~= "function" and (type(parser) ~= "string" or BUILTIN[parser]) then return {} end
  local ok, out = pcall(function()
    local fn = type(parser) == "function" and parser() or assert(loadfile(vim.fs.normalize(parser)))()
    local got = fn(vim.tbl_extend("force", file, { filename = vim.fs.basename(file.path) }))
    if type(got) ~= "table" or type(got.content) ~= "string" then error("it returned no content", 0) end
    file.content, file.system_prompt = got.content, type(got.system_prompt) == "string" and got.system_prompt or nil
    return vim.tbl_map(function(p) return { path = tostring(p) } end, vim.tbl_get(got, "meta", "included_files") or {})
  end)
  return ok and out or table.insert(problems, ("the %s parser failed on %s: %s"):format(file.parser,
    vim.fn.fnamemodify(file.path, ":~:."), out)) or {}
end

-- The rules items of `names` (groups), and the problems met (one sentence each). The engine
-- finds the files each entry names (codecompanion_py/rules.py) and reads them through the
-- repository door: regular files only, sizes capped, invalid UTF-8 replaced, and a
-- repository file's imports kept inside the project unless `rules.opts.allowed_paths` allows them.
---@param config table the plugin's config
---@param names string[] group names
---@return { kind: "rules", path: string, label: string, content: string, filetype: string }[] items
---@return string[] problems
function M.load(config, names)
  local groups = M.groups(config)
  local found, problems = {}, {}
  for _, name in ipairs(names) do
    if groups[name] then
      entries(groups[name], groups[name].parser, found)
    else
      table.insert(problems, ("there is no rule group %q"):format(name))
    end
  end
  -- a file that is not there is left out here as the engine would: a chat in a project with
  -- no rules files opens without waiting for the engine to start
  local cwd = vim.fn.getcwd()
  found = vim.tbl_filter(function(entry)
    if entry.files ~= nil or entry.path:find("[%*%?%[{$]") then
      return true
    end
    local path = vim.fs.normalize(entry.path)
    return vim.uv.fs_stat(path:sub(1, 1) == "/" and path or (cwd .. "/" .. path)) ~= nil
  end, found)
  if #found == 0 then
    return {}, problems
  end
  local allowed = vim.tbl_get(rules_config(config), "opts", "allowed_paths") or {}
  local function read(payload) -- through the engine's door; the files read, or nil
    local ok, answer = pcall(require("codecompanion_py.rpc").request, "rules.read", vim.tbl_extend("force", {
      cwd = cwd, home = vim.uv.os_homedir(),
      allowed = type(allowed) == "table" and vim.tbl_filter(function(p) return type(p) == "string" end, allowed) or {},
    }, payload))
    if ok and type(answer) == "table" then
      return vim.list_extend(problems, answer.problems or {}) and answer.items or {}
    elseif answer ~= require("codecompanion_py.rpc").GONE then -- an engine that stopped says so itself
      table.insert(problems, ("the rules were not read: %s"):format(ok and "no answer from the engine" or answer))
    end
  end
  local files, items, included = read({ entries = found }) or {}, {}, {}
  for _, file in ipairs(files) do
    vim.list_extend(included, parse(config, file, problems))
  end
  vim.list_extend(files, #included > 0 and read({ files = included }) or {})
  for _, file in ipairs(files) do
    table.insert(items, { kind = "rules", path = file.path, label = vim.fn.fnamemodify(file.path, ":~:."),
      content = file.content, system_prompt = file.system_prompt,
      filetype = vim.filetype.match({ filename = file.path }) or "markdown" })
  end
  return items, problems
end

return M
