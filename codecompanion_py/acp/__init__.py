"""Coding agents over the Agent Client Protocol (ACP v1): the client the chat uses to
drive agents such as Claude Code, Codex and Gemini CLI, and the bridge that makes CLIs
without ACP speak it."""
