-- A project's own config, CodeCompanion's `opts.per_project_config`: `paths` keyed by the
-- working directory, and `files` in it. Such a file is Lua that came with the repository, so
-- it runs only when Neovim's trust database says so (vim.secure.read asks the first time and
-- after each change; :trust answers ahead); one not read is named, never skipped silently.
local M = {}

---@param fmt string
local function warn(fmt, ...)
  vim.notify("CodeCompanion: per_project_config: " .. fmt:format(...), vim.log.levels.WARN)
end

-- What the file `path` returns, nil (and said why) when it is not trusted or not a table.
---@param path string
---@return table|nil
local function read(path)
  local ok, text = pcall(vim.secure.read, path)
  if not ok or not text then
    return warn("%s is not trusted, so it was not run (:trust it to use it)", path)
  end
  local chunk, err = load(text, "@" .. path, "t")
  local done, value = pcall(chunk or error, err)
  if not done or type(value) ~= "table" then
    return warn("%s %s", path, done and "must return a table" or ("failed: " .. tostring(value)))
  end
  return value
end

-- The config the working directory adds over setup()'s, nil when it adds none.
---@param cfg table|nil opts.per_project_config
---@return table|nil
function M.config(cfg)
  if type(cfg) ~= "table" or cfg.enabled == false then
    return nil
  end
  local cwd, found = vim.fs.normalize(vim.fn.getcwd()), {}
  for path, value in pairs(type(cfg.paths) == "table" and cfg.paths or {}) do
    if vim.fs.normalize(vim.fn.expand(tostring(path))) == cwd then
      found[#found + 1] = type(value) == "table" and value or warn("paths[%q] must be a table", path)
    end
  end
  for _, name in ipairs(type(cfg.files) == "table" and cfg.files or {}) do
    local path = vim.fs.joinpath(cwd, name)
    if vim.fn.filereadable(path) == 1 then
      found[#found + 1] = read(path)
    end
  end
  return #found > 0 and vim.tbl_deep_extend("force", {}, unpack(found)) or nil
end

return M
