"""The debug view (`gd`): what the engine holds for a chat, as Markdown for a read-only
window. Nothing in it shows a secret the last request carried (`client.scrub`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..client import HttpRequest, scrub
from ..messages import Message
from ..ui.ops import AdapterInfo


def _json(value: Any) -> str:
    return json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False, default=str)


def _fenced(language: str, text: str) -> list[str]:
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    return [fence + language, text, fence, ""]


def debug_text(
    info: AdapterInfo,
    *,
    details: Mapping[str, Any],
    history: Sequence[Message],
    request: HttpRequest | None = None,
    no_request: str = "No request has been sent yet.",
) -> str:
    lines = [f"# Debug: {info.formatted_name}", ""]
    lines += [f"- adapter: `{info.name}` ({info.type})", f"- model: `{info.model or 'default'}`"]
    lines += [f"- {key}: `{json.dumps(value, default=str)}`" for key, value in details.items()]
    lines += ["", f"## Messages ({len(history)})", ""]
    lines += _fenced("json", _json(list(history)))
    lines += ["## Last request", ""]
    if request is None:
        lines += [no_request, ""]
    else:
        body = request.body.decode("utf-8", "replace")
        try:
            body = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        except ValueError:
            pass
        lines += [f"`{request.method} {request.url}`", ""]
        lines += _fenced("json", body)
    # what the user pasted (a key in a message) is scrubbed too
    return scrub("\n".join(lines).rstrip() + "\n", request)
