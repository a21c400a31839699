-- ${lsp.diagnostics} for lsp.md: the selected lines' diagnostics, one per line.
local SEVERITY = { "ERROR", "WARN", "INFO", "HINT" }

return {
  diagnostics = function(args)
    local context = args.context
    local out = {}
    for _, d in ipairs(vim.diagnostic.get(context.bufnr)) do
      if d.lnum + 1 >= context.start_line and d.lnum + 1 <= context.end_line then
        table.insert(out, ("- line %d, %s: %s"):format(d.lnum + 1, SEVERITY[d.severity] or "?", d.message))
      end
    end
    return #out > 0 and table.concat(out, "\n") or "(no diagnostics on these lines)"
  end,
}
