-- A project's own config, CodeCompanion's `opts.per_project_config`: `paths` keyed by the
-- working directory, and `files` in it. Such a file is Lua that came with the repository, so
-- it runs only when Neovim's trust database says so (vim.secure.read asks the first time and
-- after each change; :trust answers ahead); one not run is named, never skipped silently.
local M = {}

-- What the file `path` returns; nil, and the user told why, when it is not run or gives no table.
---@param path string
---@return table|nil
local function run(path)
  local ok, text = pcall(vim.secure.read, path)
  local chunk, err = load(ok and text or "", "@" .. path, "t")
  local done, value = pcall(chunk or error, err)
  local why = not (ok and text) and "is not trusted, so it was not run (:trust it to use it)"
    or not done and ("failed: " .. tostring(value)) or type(value) ~= "table" and "must return a table"
  return not why and value or vim.notify(("CodeCompanion: per_project_config: %s %s"):format(path, why),
    vim.log.levels.WARN)
end

-- The config the working directory adds over setup()'s, nil when it adds none.
---@param cfg table|nil opts.per_project_config
---@return table|nil
function M.config(cfg)
  if type(cfg) ~= "table" or cfg.enabled == false then return nil end
  local cwd, found = vim.fs.normalize(vim.fn.getcwd()), {}
  for path, value in pairs(type(cfg.paths) == "table" and cfg.paths or {}) do
    if vim.fs.normalize(vim.fn.expand(tostring(path))) == cwd then
      found[#found + 1] = type(value) == "table" and value
        or vim.notify(("CodeCompanion: per_project_config.paths[%q] must be a table"):format(path), vim.log.levels.WARN)
    end
  end
  for _, name in ipairs(type(cfg.files) == "table" and cfg.files or {}) do
    local path = vim.fs.joinpath(cwd, name)
    found[#found + 1] = vim.fn.filereadable(path) == 1 and run(path) or nil
  end
  return #found > 0 and vim.tbl_deep_extend("force", {}, unpack(found)) or nil
end

return M
