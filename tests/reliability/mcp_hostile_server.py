"""An MCP server over stdio that misbehaves on request: `leak` answers with its env's
API_TOKEN, `crash` writes it to stderr and exits, `big` answers with `size` bytes of text,
`huge` with one line of `size` bytes (its id last, as the TypeScript SDK orders a reply),
`flood` sends `count` progress notifications under a token it makes up and as many under
its own, then answers; `deep` answers with arrays nested 100,000 deep, `latin` with bytes
that are not UTF-8; `echo` answers. HOSTILE_TOOLS (JSON list) names the tools it lists
instead (HOSTILE_TOOL_COUNT: that many tools `t<n>`), and HOSTILE_INSTRUCTIONS_BYTES gives
it instructions of that size."""

from __future__ import annotations

import json
import os
import sys

NAMES = json.loads(os.environ.get("HOSTILE_TOOLS") or "null") or [
    "leak",
    "crash",
    "big",
    "huge",
    "flood",
    "deep",
    "latin",
    "echo",
]
NAMES += [f"t{n}" for n in range(int(os.environ.get("HOSTILE_TOOL_COUNT") or 0))]
TOOLS = [
    {"name": name, "description": f"{name}\x1b[2J\nsecond line", "inputSchema": {"type": "object"}} for name in NAMES
]
INSTRUCTIONS = "I" * int(os.environ.get("HOSTILE_INSTRUCTIONS_BYTES") or 0)


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def call(ident, name: str, args: dict) -> None:
    if name == "leak":
        send({"jsonrpc": "2.0", "id": ident, "result": text(f"my token is {os.environ.get('API_TOKEN')}")})
    elif name == "crash":
        sys.stderr.write(f"fatal: bad credentials {os.environ.get('API_TOKEN')}\n")
        sys.stderr.flush()
        sys.exit(2)
    elif name == "big":
        send({"jsonrpc": "2.0", "id": ident, "result": text("x" * int(args["size"]))})
    elif name == "huge":
        reply = json.dumps({"result": text("y" * int(args["size"])), "jsonrpc": "2.0", "id": ident})
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()
    elif name == "flood":
        own = (args.get("_meta") or {}).get("progressToken")
        for token in ("not-yours", own):
            for step in range(int(args["count"])):
                params = {"progressToken": token, "progress": step, "total": args["count"], "message": "w\nork"}
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))
                sys.stdout.write("\n")
        sys.stdout.flush()
        send({"jsonrpc": "2.0", "id": ident, "result": text("flooded")})
    elif name == "deep":
        nested = "[" * 100_000 + "]" * 100_000
        sys.stdout.write(f'{{"jsonrpc":"2.0","id":{json.dumps(ident)},"result":{{"content":[],"x":{nested}}}}}\n')
        sys.stdout.flush()
    elif name == "latin":
        reply = json.dumps({"jsonrpc": "2.0", "id": ident, "result": text("caf@")}).encode()
        sys.stdout.buffer.write(reply.replace(b"@", b"\xe9") + b"\n")
        sys.stdout.buffer.flush()
    else:
        send({"jsonrpc": "2.0", "id": ident, "result": text(f"echo {args.get('text')}")})


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile"}}
        if INSTRUCTIONS:
            result["instructions"] = INSTRUCTIONS
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        params = message["params"]
        call(ident, params["name"], {**params.get("arguments", {}), "_meta": params.get("_meta")})
    else:
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
