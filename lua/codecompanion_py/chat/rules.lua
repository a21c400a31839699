-- Rules files, CodeCompanion's `rules`: groups of files (AGENTS.md, CLAUDE.md, .cursorrules...)
-- whose text goes into a chat as context. `rules.opts.chat.autoload` (default "default")
-- names the groups every new chat loads; `/rules` adds a group to a chat; `gM` removes
-- them all. A file read with the `claude` or `codecompanion` parser brings the files its
-- `@path` lines name (resolved beside it, then in the cwd), five deep; a file met twice is
-- sent once, so an import loop ends. Files that do not exist are left out. The engine reads
-- them all (`rules.read`, codecompanion_py/repository.py): a repository file imports
-- nothing from outside the project unless `rules.opts.allowed_paths` allows it.
-- An entry may also be a directory (its files), a glob ("docs/**/*.md"), or a directory
-- with `files` patterns (`{ path = ".", files = { "*.md" } }`), as in CodeCompanion.
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

local function rules_config(config)
  return type(config.rules) == "table" and config.rules or {}
end

-- Every group: the defaults, with the user's groups over them (a group of the same name replaces it).
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

-- The { path, parser } entries of a group, its nested groups' included.
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

-- `path` (`~` and `$VAR` expanded) from `cwd`: fnamemodify(expand(path), ":p") without the
-- two Vimscript calls, which cost most of a chat's opening rules (eleven files by default).
local function absolute(path, cwd)
  if path:find("[~$]") then
    path = vim.fn.expand(path)
  end
  if path:sub(1, 1) == "/" or path:match("^%a:[/\\]") then
    return path
  end
  return cwd .. "/" .. path
end

M.MAX_FILES = 100 -- the most files one entry (a directory, a glob) brings
M.MAX_VISITS = 20000 -- the most entries one entry's search looks at: `~` or `/` must not hang the editor

local function searched(name)
  return name ~= ".git" and name ~= "node_modules"
end

-- The files under `dir` at any depth (not in .git or node_modules) whose path from `dir`
-- `wanted` accepts, sorted; and true when the search stopped after M.MAX_VISITS entries.
local function walk(dir, wanted)
  local found, visits = {}, 0
  for name, kind in vim.fs.dir(dir, { depth = math.huge, skip = searched }) do
    visits = visits + 1
    if visits > M.MAX_VISITS then
      table.sort(found)
      return found, true
    end
    if (kind == "file" or kind == "link") and wanted(name) then
      table.insert(found, dir .. "/" .. name)
    end
  end
  table.sort(found)
  return found, false
end

local function matchers(patterns)
  local out = {}
  for _, pattern in ipairs(type(patterns) == "string" and { patterns } or patterns or {}) do
    local ok, matcher = pcall(vim.glob.to_lpeg, pattern)
    if ok then
      table.insert(out, matcher)
    end
  end
  return out
end

-- The files under `dir` whose names match one of `patterns` ("*.md"; every file when nil).
local function scan(dir, patterns)
  local names = matchers(patterns)
  return walk(dir, function(name)
    local base = vim.fs.basename(name)
    for _, matcher in ipairs(names) do
      if matcher:match(base) then
        return true
      end
    end
    return patterns == nil
  end)
end

-- Whether `path` is a directory, and whether it exists.
local function is_dir(path)
  local stat = vim.uv.fs_stat(path)
  return stat ~= nil and stat.type == "directory", stat ~= nil
end

-- The files a glob matches ("docs/**/*.md"), a matched directory's files too: searched from
-- the glob's last directory without a wildcard.
local function glob(path)
  local root, rest = path:match("^(.-)/([^/]*[*?[{].*)$")
  if not root then
    return {}, false
  end
  root = root == "" and "/" or root
  local matcher = matchers(rest)[1]
  if not matcher or not is_dir(root) then
    return {}, false
  end
  return walk(root, function(name)
    local prefix = name
    while prefix do -- the file, or a directory it is in
      if matcher:match(prefix) then
        return true
      end
      prefix = prefix:match("^(.*)/[^/]*$")
    end
    return false
  end)
end

-- The files an entry names, as CodeCompanion reads them: the file; every file under a
-- directory; a glob's matches (a matched directory's files too); with `files`, the files
-- under the directory `path` whose names match those patterns. And what is wrong with the
-- entry, if anything: a `files` entry that is no directory, a search stopped at M.MAX_VISITS.
local function expand(entry, cwd)
  local path = absolute(entry.path, cwd)
  local paths, stopped
  local dir, exists = is_dir(path)
  if path:find("[*?[{]") and entry.files == nil then
    paths, stopped = glob(path)
  elseif dir then
    paths, stopped = scan(path, entry.files)
  elseif entry.files ~= nil then
    return {}, ("%s (a rule entry with `files`) is not a directory"):format(entry.path)
  else
    paths = exists and { path } or {} -- a file that is not there is left out
  end
  if stopped then
    return paths, ("%s: the search stopped after %d files and folders"):format(entry.path, M.MAX_VISITS)
  end
  return paths, nil
end

-- Whether the config names `path` itself (absolute, `~`, `$VAR`, `../`): the user's own file,
-- which may be read wherever it is. Any other entry is a repository file (CLAUDE.md,
-- docs/**/*.md) and stays in the project, its symlinks judged by their targets.
local function named(path)
  local normal = vim.fs.normalize(path)
  return path:match("^[/~$]") ~= nil or path:match("^%a:[/\\]") ~= nil
    or normal == ".." or normal:match("^%.%./") ~= nil
end

-- The engine reads the files (codecompanion_py/repository.py): regular files only, sizes
-- capped, invalid UTF-8 replaced, and a repository file's imports kept inside the project
-- unless `rules.opts.allowed_paths` allows them.
local function read_files(config, files, cwd)
  local allowed = vim.tbl_get(rules_config(config), "opts", "allowed_paths") or {}
  local ok, answer = pcall(require("codecompanion_py.rpc").request, "rules.read", {
    cwd = cwd,
    home = vim.uv.os_homedir(),
    allowed = type(allowed) == "table" and vim.tbl_filter(function(p) return type(p) == "string" end, allowed) or {},
    files = files,
  })
  if not ok or type(answer) ~= "table" then
    return {}, { ("the rules were not read: %s"):format(ok and "no answer from the engine" or tostring(answer)) }
  end
  return answer.items or {}, answer.problems or {}
end

-- The rules items of `names` (groups): { kind = "rules", path, label, content, filetype },
-- and the problems met (one sentence each).
function M.load(config, names)
  local groups = M.groups(config)
  local files, problems = {}, {}
  local cwd = vim.fn.getcwd()
  for _, name in ipairs(names) do
    local group = groups[name]
    if not group then
      table.insert(problems, ("there is no rule group %q"):format(name))
    else
      for _, entry in ipairs(entries(group, group.parser, {})) do
        local paths, problem = expand(entry, cwd)
        if problem then
          table.insert(problems, problem)
        end
        if #paths > M.MAX_FILES then
          table.insert(problems, ("%s names %d files: the first %d were read"):format(entry.path, #paths,
            M.MAX_FILES))
        end
        for i = 1, math.min(#paths, M.MAX_FILES) do
          table.insert(files, { path = paths[i], parser = entry.parser, named = named(entry.path) })
        end
      end
    end
  end
  if #files == 0 then
    return {}, problems
  end
  local read, said = read_files(config, files, cwd)
  vim.list_extend(problems, said)
  local items = {}
  for _, file in ipairs(read) do
    table.insert(items, { kind = "rules", path = file.path, label = vim.fn.fnamemodify(file.path, ":~:."),
      content = file.content, filetype = vim.filetype.match({ filename = file.path }) or "markdown" })
  end
  return items, problems
end

return M
