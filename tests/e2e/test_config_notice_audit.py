"""The setup notice, audited against every option CodeCompanion 19 has: each key of its
default config (tests/fixtures/codecompanion19_options.json) is set to a value other than its
default in headless Neovim, alone and then all at once through setup(), and the keys the
notice names must be exactly those in NAMED below, each with why. A key that starts working here comes off NAMED; one that stops
working, or a new CodeCompanion key this plugin does not know, fails the test until listed.
NAMED is what the README's "What differs" lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.nvim

OPTIONS = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "codecompanion19_options.json").read_text(encoding="utf-8")
)["options"]

# Each option set to a value a user might give instead of the default (false is left out:
# turning off what is not here loses nothing, and the notice says nothing of it), alone and
# then all together (also through setup(), whose one-line notice is caught); returns {named key:
# [the options that made it named]}, {named key: the notice's reason} and the keys named for
# all of them at once.
AUDIT = """
local options = ...
local check = require("codecompanion_py.config_check")
local function changed(option)
  local kind = option.type
  if kind == "boolean" then
    return not option.default
  elseif kind == "number" then
    return option.default + 1
  elseif kind == "string" then
    return "audit"
  elseif kind == "function" then
    return function() end
  end
  return { "audit" } -- a list, or an empty table
end
local function place(into, path, value)
  for i = 1, #path - 1 do
    into[path[i]] = into[path[i]] or {}
    into = into[path[i]]
  end
  into[path[#path]] = value
end
local named, why, all = {}, {}, {}
for _, option in ipairs(options) do
  local value, alone = changed(option), {}
  place(alone, option.path, value)
  place(all, option.path, value)
  for _, item in ipairs(check.unsupported(alone)) do
    named[item.key], why[item.key] = named[item.key] or {}, item.why
    table.insert(named[item.key], table.concat(option.path, "."))
  end
end
local together = vim.tbl_map(function(item) return item.key end, check.unsupported(all))
_G.notices = {}
vim.notify = function(msg) table.insert(_G.notices, msg) end
require("codecompanion").setup(all) -- the real setup(), whose notice follows once startup is over
return { named = named, why = why, together = together }
"""
NOTICE = "CodeCompanion ignores "

# Every key the notice names for a CodeCompanion 19 option, with why (one line each).
NAMED: dict[str, str] = {
    "display.action_palette.height": "the palette is the picker's own window: its size, prompt and title are the picker's",
    "display.action_palette.opts.title": "the palette is the picker's own window: its size, prompt and title are the picker's",
    "display.action_palette.prompt": "the palette is the picker's own window: its size, prompt and title are the picker's",
    "display.action_palette.width": "the palette is the picker's own window: its size, prompt and title are the picker's",
    "display.chat.fold_context": "the Context block is a few lines, never folded",
    "display.chat.icons.buffer_sync_all": "only the tool_success and tool_failure icons are drawn",
    "display.chat.icons.buffer_sync_diff": "only the tool_success and tool_failure icons are drawn",
    "display.chat.icons.chat_fold": "only the tool_success and tool_failure icons are drawn",
    "display.chat.icons.tool_in_progress": "only the tool_success and tool_failure icons are drawn",
    "display.chat.icons.tool_pending": "only the tool_success and tool_failure icons are drawn",
    "display.chat.separator": "no separator is drawn under the headers",
    "display.chat.show_header_separator": "no separator is drawn under the headers",
    "display.chat.window.pertab": "chats are not kept per tab",
    "display.chat.window.sticky": "the chat window does not follow you between tabs",
    "display.diff.window": "the diff review is in the buffer itself; gv opens a diff tab",
    "display.icons": "these icons are not drawn",
    "display.input": "the inline prompt is asked with vim.ui.input",
    "interactions.background.gates.judge.action": "the judge is built into the engine: its action cannot be replaced",
    "interactions.background.chat.callbacks.on_checkpoint": "only the background title action (on_ready) runs",
    "interactions.chat.opts.blank_prompt": "an empty message is not sent",
    "interactions.chat.opts.context_management.compaction.fallback_to_chat_adapter": "a failed summary ends the turn with its reason",
    "interactions.chat.opts.debounce": "the completion plugin's own debounce applies",
    "interactions.chat.opts.wait_timeout": "approval prompts wait until answered",
    "interactions.chat.opts.yank_jump_delay_ms": "gy yanks without moving the cursor",
    "interactions.chat.slash_commands.buffer.opts.default_params": "this slash command option is not read",
    "interactions.chat.slash_commands.buffer.opts.interactions": "this slash command option is not read",
    "interactions.chat.slash_commands.fetch.opts.adapter": "this slash command option is not read",
    "interactions.chat.slash_commands.fetch.opts.cache_path": "this slash command option is not read",
    "interactions.chat.slash_commands.file.opts.interactions": "this slash command option is not read",
    "interactions.chat.slash_commands.file.opts.max_lines": "this slash command option is not read",
    "interactions.chat.slash_commands.help.opts.max_lines": "this slash command option is not read",
    "interactions.chat.slash_commands.image.opts.dirs": "this slash command option is not read",
    "interactions.chat.slash_commands.image.opts.filetypes": "this slash command option is not read",
    "interactions.chat.slash_commands.resume.opts.max_sessions": "this slash command option is not read",
    "interactions.chat.slash_commands.rules.opts.interactions": "this slash command option is not read",
    "interactions.chat.tools.opts.folds": "long tool output is always folded",
    "interactions.chat.tools.opts.system_prompt": "no separate tools system prompt: each tool sends its own",
    "interactions.cmd.opts.system_prompt": ":CodeCompanionCmd uses this plugin's own system prompt",
    "interactions.inline.editor_context": "the inline assistant takes the built-in context only",
    "interactions.opts.watcher": "no file watching yet",
    "interactions.shared.editor_context.buffer.description": "the built-in #{...} context works; entries of your own or changes to it are not read yet",
    "interactions.shared.editor_context.buffer.path": "the built-in #{...} context works; entries of your own or changes to it are not read yet",
    "interactions.shared.editor_context.buffers.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.code_review.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.diagnostics.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.diff.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.messages.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.quickfix.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.selection.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.terminal.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.this.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.viewport.path": "a built-in #{...} is this plugin's own: another module for it is not read",
    "interactions.shared.editor_context.opts": "the built-in #{...} context works; entries of your own or changes to it are not read yet",
    "opts.submit_delay": "a prompt given to a new chat is sent at once",
    "opts.triggers": "the triggers are fixed: #, @, / and \\",
    "rules.opts.chat.autoload_groups_in_prompt_library": "rule groups are in the action palette, not the prompt library",
    "rules.opts.chat.default_params": "a rules file is sent once, not watched",
}


def test_the_notice_names_exactly_the_listed_options(editor):
    editor.nvim.options["columns"] = 10_000  # the notice is cut to one screen line: make it hold every key
    result = editor.lua(AUDIT, OPTIONS)
    named = result["named"]
    new = sorted(set(named) - set(NAMED))
    gone = sorted(set(NAMED) - set(named))
    assert not new and not gone, (
        "named but not in NAMED (list them with why): "
        + "; ".join(f"{key} (from {named[key][0]}: {result['why'][key]})" for key in new)
        + "\nin NAMED but no longer named (take them off): "
        + ", ".join(gone)
    )
    assert sorted(result["together"]) == sorted(named)
    notice = editor.wait_for(lambda: editor.lua("return _G.notices[1]"), what="the setup notice")
    assert notice == NOTICE + ", ".join(sorted(named)) + " (:checkhealth codecompanion)"
