-- Reading the files the user points at (a #{file:}, the prompt library's markdown files):
-- the engine reads them (`files.read`, codecompanion_py/repository.py), as it reads rules
-- files: regular files only, never waited on, 1 MB at most, invalid UTF-8 replaced, and a
-- name inside the project that links out of it refused. Only this plugin's own files are
-- read here (M.read_own), with the same non-blocking care.
local M = {}

M.MAX_BYTES = 1000000

-- The text of each of `paths` (absolute), in order: { content = text } or { error = why };
-- or nil and why when the engine cannot be asked.
function M.read_many(paths)
  if #paths == 0 then
    return {}
  end
  local ok, answer = pcall(require("codecompanion_py.rpc").request, "files.read",
    { cwd = vim.fn.getcwd(), home = vim.uv.os_homedir(), paths = paths })
  if not ok or type(answer) ~= "table" then
    return nil, ("the files were not read: %s"):format(ok and "no answer from the engine" or tostring(answer))
  end
  return answer
end

-- The file's text, or nil and why.
function M.read_text(path)
  local answer, why = M.read_many({ path })
  if not answer then
    return nil, why
  end
  local result = answer[1] or {}
  return result.content, result.error or (result.content == nil and "no answer from the engine" or nil)
end

local uv = vim.uv

M.MAX_VISITS = 20000 -- the most entries one search looks at

-- The files under `dir` (absolute) whose names end with `suffix`, at any depth (none hidden), sorted:
-- linked folders are followed, each real folder once (Vim's `**` went round a folder that
-- links to itself 2^30 times), and at most M.MAX_VISITS entries are looked at.
function M.find(dir, suffix)
  local found, seen, visits = {}, {}, 0
  local function visit(path)
    local real = uv.fs_realpath(path)
    if not real or seen[real] then
      return
    end
    seen[real] = true
    local handle = uv.fs_scandir(path)
    while handle and visits < M.MAX_VISITS do
      local name, kind = uv.fs_scandir_next(handle)
      if not name then
        break
      end
      visits = visits + 1
      local child = path .. "/" .. name
      kind = kind == "link" and (uv.fs_stat(child) or {}).type or kind
      local hidden = name:sub(1, 1) == "." -- left out, as `**` leaves them
      if not hidden and kind == "directory" then
        visit(child)
      elseif not hidden and kind and name:sub(-#suffix) == suffix then -- a FIFO too: the engine says why
        table.insert(found, child)
      end
    end
  end
  visit((dir:gsub("/+$", "")))
  table.sort(found)
  return found
end

-- `path` with a leading `~` and its `$VAR`/`${VAR}` expanded (unset ones left as they are), as
-- the engine expands one (repository.expand). Never vim.fn.expand: a name of the project such as
-- "`cmd`.png" would run `cmd` in a shell, and `*`, `%` or `#` would name other files.
function M.expand(path)
  if path == "~" or path:sub(1, 2) == "~/" then
    path = uv.os_homedir() .. path:sub(2)
  end
  local function var(name, whole)
    return os.getenv(name) or whole
  end
  path = path:gsub("(%${([%w_]+)})", function(whole, name) return var(name, whole) end)
  return (path:gsub("(%$([%a_][%w_]*))", function(whole, name) return var(name, whole) end))
end

-- A file of this plugin's own (a built-in prompt): a regular file opened without blocking.
function M.read_own(path)
  local fd, err = uv.fs_open(path, uv.constants.O_RDONLY + uv.constants.O_NONBLOCK, 0)
  if not fd then
    return nil, tostring(err)
  end
  local stat = uv.fs_fstat(fd)
  local text
  if stat and stat.type == "file" and stat.size <= M.MAX_BYTES then
    text, err = uv.fs_read(fd, stat.size, 0)
  else
    err = vim.fn.fnamemodify(path, ":~") .. " is not a file of at most 1 MB"
  end
  uv.fs_close(fd)
  return text, text == nil and tostring(err) or nil
end

return M
