"""editor.lua answers the engine's `call` ops: a method it does not know is an error sent
back to the engine (which raises it where it asked) and, once, a notice to the user, as an
unknown UI op is; never silence."""

from __future__ import annotations


def test_an_unknown_editor_method_is_answered_with_an_error_and_reported_once(editor):
    editor.lua("_G.cc_notes = {}; vim.notify = function(msg) table.insert(_G.cc_notes, msg) end")
    sent = editor.lua(
        """
        local rpc = require("codecompanion_py.rpc")
        local sent, raw = {}, rpc.notify_raw
        rpc.notify_raw = function(method, payload) table.insert(sent, { method, payload }) end
        local handle = require("codecompanion_py.editor").handle
        local ok, err = pcall(function()
          handle(nil, { id = 7, method = "frobnicate" })
          handle(nil, { id = 8, method = "frobnicate" })
        end)
        rpc.notify_raw = raw
        assert(ok, err)
        return sent
        """
    )
    assert sent == [
        ["editor.reply", {"id": 7, "error": "unknown editor method frobnicate"}],
        ["editor.reply", {"id": 8, "error": "unknown editor method frobnicate"}],
    ]
    notes = [n for n in editor.lua("return _G.cc_notes") if "unknown method" in n]
    assert notes == [
        'CodeCompanion: the engine asked the editor for an unknown method "frobnicate"; the Lua and Python parts '
        "of the plugin do not match (update both)"
    ]
