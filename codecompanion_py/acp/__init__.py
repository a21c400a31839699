"""Coding agents over the Agent Client Protocol (ACP v1): the client the chat uses to
drive agents such as Claude Code, Codex and Gemini CLI, and the JSON-RPC both it and the
bridge (`codecompanion_py.acp_bridge`, which this package never imports) speak."""
