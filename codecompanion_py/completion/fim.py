"""How each provider is asked for the middle of a text: its fill-in-the-middle endpoint and
body, and where the answers are in its reply. A provider without one (OpenAI, Anthropic,
Gemini, Copilot's chat models) gets `prompt.py`'s chat prompt instead.

The kind comes from the adapter: `opts.fim` names it (one of KINDS, or false for the chat
prompt); otherwise the provider's host or its wire decides (Mistral: Codestral's
`/v1/fim/completions`; DeepSeek: `/beta/completions`; Ollama: `/api/generate`; any other
OpenAI-compatible server: `/v1/completions` beside its `/chat/completions`). llama.cpp's
`/infill` is named with `opts.fim = "llama_cpp"`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..adapters.base import HTTPAdapter
from ..client import HttpRequest
from .context import CompletionContext

Kind = Literal["codestral", "deepseek", "ollama", "llama_cpp", "openai", "chat"]
KINDS: tuple[Kind, ...] = ("codestral", "deepseek", "ollama", "llama_cpp", "openai", "chat")
MAX_TOKENS = 128
CODESTRAL_MODEL = "codestral-latest"  # for the codestral kind when interactions.completion names no model
CHAT_HOSTS = ("api.openai.com", "openai.azure.com", "anthropic.com", "googleapis.com", "githubcopilot.com", "github.ai")
_COMMENT = {"python": "#", "sh": "#", "bash": "#", "ruby": "#", "yaml": "#", "toml": "#", "lua": "--", "sql": "--"}
_encode = msgspec.json.Encoder().encode


def kind_of(adapter: HTTPAdapter) -> Kind:
    """Which way `adapter` (prepared: its url filled in) is asked."""
    chosen = adapter.opts.get("fim")
    if chosen is False:
        return "chat"
    if chosen in KINDS:
        return chosen
    name, url = f"{adapter.name} {adapter.formatted_name}".lower(), urlsplit(adapter.url)  # an extend()'s too
    host, path = (url.hostname or "").lower(), url.path.rstrip("/")
    if "azure" in name or "/openai/deployments/" in path:  # Azure's deployments of chat models serve no /completions
        return "chat"
    if "llama_cpp" in name or "llamacpp" in name:
        return "llama_cpp"
    if "mistral" in name or "codestral" in name or host.endswith("mistral.ai"):
        return "codestral"
    if "deepseek" in name or host.endswith("deepseek.com"):
        return "deepseek"
    if path.endswith("/api/chat"):
        return "ollama"
    if path.endswith("/chat/completions") and not any(host.endswith(h) for h in CHAT_HOSTS):
        return "openai"
    return "chat"


@dataclass(frozen=True)
class Shape:
    path: Callable[[str], str]  # the FIM endpoint from the chat URL's path
    body: Callable[[CompletionContext, str | None, int], dict[str, Any]]
    answers: Callable[[Any], list[str]]
    takes_n: bool = False  # asks for several candidates in one request


def _prompt(context: CompletionContext) -> str:
    """The prefix, after the other buffers' snippets and the file's name, in comments."""
    mark = _COMMENT.get(context.filetype, "//")
    head = [f"{mark} {s.path}\n{s.text}\n" for s in context.recent]
    if context.path:
        head.append(f"{mark} {context.path}\n")
    return "".join(head) + context.prefix


def _completions(context: CompletionContext, model: str | None, n: int) -> dict[str, Any]:
    body: dict[str, Any] = {"prompt": _prompt(context), "suffix": context.suffix, "max_tokens": MAX_TOKENS}
    body.update(temperature=0 if n == 1 else 0.4, stream=False)
    if n > 1:
        body["n"] = n
    return {"model": model, **body} if model else body


def _ollama(context: CompletionContext, model: str | None, n: int) -> dict[str, Any]:
    # `raw` stays off: the suffix goes through the model's own FIM template
    options = {"num_predict": MAX_TOKENS, "temperature": 0 if n == 1 else 0.4}
    body = {"prompt": _prompt(context), "suffix": context.suffix, "stream": False, "raw": False, "options": options}
    return {"model": model, **body} if model else body


def _infill(context: CompletionContext, model: str | None, n: int) -> dict[str, Any]:
    extra = [{"filename": s.path, "text": s.text} for s in context.recent]
    return {
        "input_prefix": context.prefix,
        "input_suffix": context.suffix,
        "input_extra": extra,
        "n_predict": MAX_TOKENS,
        "temperature": 0 if n == 1 else 0.4,
        "stream": False,
    }


def _choices(reply: Any) -> list[str]:
    choices = reply.get("choices") if isinstance(reply, Mapping) else None
    out = []
    for choice in choices if isinstance(choices, list) else []:
        if not isinstance(choice, Mapping):
            continue
        message = choice.get("message")
        text = (
            choice.get("text") if "text" in choice else message.get("content") if isinstance(message, Mapping) else None
        )
        if isinstance(text, str):
            out.append(text)
    return out


def _field(name: str) -> Callable[[Any], list[str]]:
    def answers(reply: Any) -> list[str]:
        value = reply.get(name) if isinstance(reply, Mapping) else None
        return [value] if isinstance(value, str) else []

    return answers


def _base(name: str) -> Callable[[str], str]:
    """The FIM path under the server's base path: `/llama/v1/chat/completions` gives `/llama` + `name`."""
    return lambda path: path.rstrip("/").removesuffix("/chat/completions").removesuffix("/v1") + name


def _beside(name: str) -> Callable[[str], str]:
    """The FIM path beside the chat one: `/v1/chat/completions` gives `/v1/completions`."""
    return lambda path: path.rstrip("/").removesuffix("/chat/completions") + name


SHAPES: dict[Kind, Shape] = {
    "codestral": Shape(_base("/v1/fim/completions"), _completions, _choices),
    "deepseek": Shape(_base("/beta/completions"), _completions, _choices),
    "ollama": Shape(
        lambda path: path.rstrip("/").removesuffix("/api/chat") + "/api/generate", _ollama, _field("response")
    ),
    "llama_cpp": Shape(_base("/infill"), _infill, _field("content")),
    "openai": Shape(_beside("/completions"), _completions, _choices, takes_n=True),
}


def request_for(ready: HTTPAdapter, shape: Shape, context: CompletionContext, n: int) -> HttpRequest:
    """The FIM request of the prepared adapter `ready` (its key, headers and host)."""
    url = urlsplit(ready.url)
    target = urlunsplit((url.scheme, url.netloc, shape.path(url.path), url.query, ""))  # ?api-version= kept
    return HttpRequest(
        url=target,
        body=_encode(shape.body(context, ready.model, n)),
        headers=dict(ready.headers),
        stream=False,
        provider=ready.formatted_name,
        model=ready.model,
        secrets=ready.secrets,
        retries=0,  # a prediction is late by the time a retry would answer
    )
