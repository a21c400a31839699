-- Reading the files the user points at (a #{file:}, a #{symbols:}): the engine reads them
-- (`files.read`, codecompanion_py/repository.py), as it reads rules files and the prompt
-- library's: regular files only, never waited on, 1 MB at most, invalid UTF-8 replaced, and
-- a name inside the project that links out of it refused.
local M = {}

-- The file's text, or nil and why.
---@param path string absolute
---@return string? content
---@return string? why
function M.read_text(path)
  local ok, answer = pcall(require("codecompanion_py.rpc").request, "files.read",
    { cwd = vim.fn.getcwd(), home = vim.uv.os_homedir(), paths = { path } })
  if not ok or type(answer) ~= "table" then
    return nil, ("the files were not read: %s"):format(ok and "no answer from the engine" or tostring(answer))
  end
  local result = answer[1] or {}
  return result.content, result.error or (result.content == nil and "no answer from the engine" or nil)
end

-- `path` with a leading `~` and its `$VAR`/`${VAR}` expanded (unset ones left as they are), as
-- the engine expands one (rules.expand). Never vim.fn.expand: a name of the project such as
-- "`cmd`.png" would run `cmd` in a shell, and `*`, `%` or `#` would name other files.
---@param path string
---@return string
function M.expand(path)
  if path == "~" or path:sub(1, 2) == "~/" then
    path = vim.uv.os_homedir() .. path:sub(2)
  end
  local function var(name, whole)
    return os.getenv(name) or whole
  end
  path = path:gsub("(%${([%w_]+)})", function(whole, name) return var(name, whole) end)
  return (path:gsub("(%$([%a_][%w_]*))", function(whole, name) return var(name, whole) end))
end

return M
