-- Whether the user trusts a project's own prompts (a `prompt_library.markdown.dirs` folder
-- inside the project, such as `.prompts`): they come with the repository, and their helper
-- `.lua` files would run in Neovim. Asked once per project, as direnv and mise ask; the
-- engine keeps the answer (codecompanion_py/prompt_trust.py) in M.file() by the project's
-- real path ({ ["/path"] = true | false }) and reads a project's prompts only once trusted.
local M = {}

local asking = {} ---@type table<string, boolean> projects with a question open

---@return string the file the answers are kept in
function M.file()
  return vim.fn.stdpath("data") .. "/codecompanion_py/trusted_prompts.json"
end

-- Ask once whether to trust the prompts of `root` (never while the caller waits: the
-- question comes after it returns); `on_trusted` runs when the user says yes.
---@param root string the project's real path
---@param on_trusted fun()
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
      local ok, err = pcall(require("codecompanion_py.rpc").request, "prompts.trust",
        { file = M.file(), root = root, trusted = choice == yes })
      if not ok then
        vim.notify("CodeCompanion: could not save the answer in " .. M.file() .. ": " .. tostring(err),
          vim.log.levels.WARN)
      end
      if choice == yes then
        on_trusted()
      end
    end)
  end)
end

return M
