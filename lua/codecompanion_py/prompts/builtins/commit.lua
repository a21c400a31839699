-- ${commit.staged_diff} for commit.md: what `git diff --staged` shows. Nothing staged (or no
-- git) is an error, so the prompt is not sent (prompts/run.lua says why in one line).
return {
  staged_diff = function()
    local result = vim.system({ "git", "diff", "--no-ext-diff", "--staged" }, { text = true }):wait(5000)
    if result.code ~= 0 then
      error("git diff failed: " .. vim.trim(result.stderr or ""), 0)
    end
    return result.stdout ~= "" and result.stdout or error("nothing is staged: stage changes with git add", 0)
  end,
}
