"""A small MCP server over stdio for the tests: `echo` (text), `shapes` (an image, a resource
link, an embedded resource and structured content), `fail` (isError) and `crash` (exits
with code 3 after writing to stderr, as a broken server does), `slow` (reports progress, then
never answers: for cancellation) and `grow` (adds a tool `extra` and says the list changed);
a prompt `review` with an argument, and a resource `file:///guide.md`. With FAKE_MCP_LOG set,
every message it reads is appended to that file."""

from __future__ import annotations

import json
import os
import sys

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {"name": "shapes", "description": "Every kind of content", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "Exits", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "slow", "description": "Takes forever", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "grow", "description": "Adds a tool", "inputSchema": {"type": "object", "properties": {}}},
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(name: str, args: dict) -> dict:
    if name == "echo":
        return {"content": [{"type": "text", "text": f"echo: {args.get('text')}"}]}
    if name == "shapes":
        return {
            "content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///notes.txt", "name": "notes"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "alpha"}},
            ],
            "structuredContent": {"count": 3},
        }
    if name == "fail":
        return {"content": [{"type": "text", "text": "the fake tool failed"}], "isError": True}
    sys.stderr.write("boom: the fake server crashed\n")
    sys.stderr.flush()
    sys.exit(3)


LOG = os.environ.get("FAKE_MCP_LOG")

for line in sys.stdin:
    if LOG:
        with open(LOG, "a") as handle:
            handle.write(line)
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "tools/call" and message["params"]["name"] == "slow":
        token = (message["params"].get("_meta") or {}).get("progressToken")
        if token is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 4, "message": "indexing"},
                }
            )
        continue  # no answer: the client cancels
    if method == "tools/call" and message["params"]["name"] == "grow":
        TOOLS.append(
            {"name": "extra", "description": "Added later", "inputSchema": {"type": "object", "properties": {}}}
        )
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "grown"}]}})
        continue
    if method == "initialize":
        result = {
            # the client's version, as a server that supports it answers (mcp-hub asks an older one)
            "protocolVersion": message.get("params", {}).get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "fake", "version": "1"},
            "instructions": "Use echo to test.",
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "prompts/list":
        result = {
            "prompts": [
                {"name": "review", "description": "Review code", "arguments": [{"name": "language", "required": True}]}
            ]
        }
    elif method == "prompts/get":
        language = message["params"].get("arguments", {}).get("language")
        result = {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": f"Review this {language} code carefully."}}
            ]
        }
    elif method == "resources/list":
        result = {"resources": [{"uri": "file:///guide.md", "name": "guide", "mimeType": "text/markdown"}]}
    elif method == "resources/read":
        result = {"contents": [{"uri": "file:///guide.md", "mimeType": "text/markdown", "text": "# Guide\nUse tabs."}]}
    elif method == "tools/call":
        result = call(message["params"]["name"], message["params"].get("arguments") or {})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no {method}"}})
        continue
    send({"jsonrpc": "2.0", "id": ident, "result": result})
