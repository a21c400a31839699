"""The debug view (`gd`): what the engine holds for a chat, as Markdown for a read-only
window. The last request's body is shown without the secrets it carried (`client.scrub`)."""

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
        body = scrub(request.body.decode("utf-8", "replace"), request)
        try:
            body = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        except ValueError:
            pass
        lines += [f"`{request.method} {scrub(request.url, request)}`", ""]
        lines += _fenced("json", body)
    return "\n".join(lines).rstrip() + "\n"
