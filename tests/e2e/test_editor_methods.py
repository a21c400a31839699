"""editor.lua answers the engine's `call` ops: a method it does not know is an error sent
back to the engine (which raises it where it asked), never silence."""

from __future__ import annotations


def test_an_unknown_editor_method_is_answered_with_an_error(editor):
    sent = editor.lua(
        """
        local rpc = require("codecompanion_py.rpc")
        local sent, raw = {}, rpc.notify_raw
        rpc.notify_raw = function(method, payload) table.insert(sent, { method, payload }) end
        local ok, err = pcall(require("codecompanion_py.editor").handle, nil, { id = 7, method = "frobnicate" })
        rpc.notify_raw = raw
        assert(ok, err)
        return sent
        """
    )
    assert sent == [["editor.reply", {"id": 7, "error": "unknown editor method frobnicate"}]]
