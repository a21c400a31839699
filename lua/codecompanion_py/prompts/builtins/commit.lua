-- ${commit.staged_diff} for commit.md: what `git diff --staged` shows.
return {
  staged_diff = function()
    local result = vim.system({ "git", "diff", "--no-ext-diff", "--staged" }, { text = true }):wait(5000)
    if result.code ~= 0 then
      return "(git diff failed: " .. vim.trim(result.stderr or "") .. ")"
    end
    return result.stdout ~= "" and result.stdout or "(nothing is staged)"
  end,
}
