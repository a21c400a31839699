-- Whether the user trusts a project's own prompts (a `prompt_library.markdown.dirs` folder
-- inside the project, such as `.prompts`): they come with the repository, and their helper
-- `.lua` files would run in Neovim. Asked once per project, as direnv and mise ask; the
-- answer is kept in stdpath("data")/codecompanion_py/trusted_prompts.json by the project's
-- real path ({ ["/path"] = true | false }).
local M = {}

local asking = {} ---@type table<string, boolean> projects with a question open

function M.file()
  return vim.fn.stdpath("data") .. "/codecompanion_py/trusted_prompts.json"
end

local function answers()
  local handle = io.open(M.file(), "rb")
  if not handle then
    return {}
  end
  local text = handle:read(64 * 1024) or "" -- one line per project: far below this
  handle:close()
  local ok, decoded = pcall(vim.json.decode, text)
  return ok and type(decoded) == "table" and decoded or {}
end

local function remember(root, trusted)
  local all = answers()
  all[root] = trusted
  local path = M.file()
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local tmp = ("%s.%d.tmp"):format(path, vim.uv.os_getpid())
  local handle = io.open(tmp, "wb")
  if not handle then
    return vim.notify("CodeCompanion: could not save the answer in " .. path, vim.log.levels.WARN)
  end
  handle:write(vim.json.encode(all))
  handle:close()
  vim.uv.fs_rename(tmp, path) -- whole or not at all
end

-- The project's real path (Neovim's working directory).
function M.project()
  return vim.uv.fs_realpath(vim.fn.getcwd()) or vim.fn.getcwd()
end

-- Whether `dir` (as the config names it) is inside the project: relative, or really in it.
-- Neovim started in the home folder has no project: the folders there are the user's own.
function M.in_project(dir, root)
  if root == (vim.uv.fs_realpath(vim.uv.os_homedir() or "") or "") then
    return false
  end
  local expanded = vim.fn.expand(dir)
  if not expanded:match("^/") and not expanded:match("^%a:[/\\]") then
    return true
  end
  local real = vim.uv.fs_realpath(expanded) or expanded
  return real == root or real:sub(1, #root + 1) == root .. "/"
end

-- true (trusted), false (the user said no) or nil (not asked yet).
function M.state(root)
  local value = answers()[root]
  if type(value) == "boolean" then
    return value
  end
  return nil
end

-- Ask once whether to trust the prompts of `root` (never while the caller waits: the
-- question comes after it returns); `on_trusted` runs when the user says yes.
function M.ask(root, on_trusted)
  if asking[root] then
    return
  end
  asking[root] = true
  vim.schedule(function()
    local yes, no = "Trust them (their helper .lua files may run)", "Do not trust them"
    vim.ui.select({ yes, no }, {
      prompt = ("CodeCompanion: trust the prompts in %s?"):format(vim.fn.fnamemodify(root, ":~")),
    }, function(choice)
      asking[root] = nil
      if choice == nil then
        return -- asked again next time
      end
      remember(root, choice == yes)
      if choice == yes then
        on_trusted()
      end
    end)
  end)
end

return M
