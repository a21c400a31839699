"""The canonical conversation model every layer speaks.

A `Message` is a role and a tuple of parts. Adapters translate it to and from their wire
formats; the chat, the tools and the UI never see a provider's shape. Each part carries
`provider_data`, an opaque slot for what must round-trip to the same provider (thinking
signatures, encrypted reasoning) and that other providers drop.

All types are frozen msgspec Structs tagged by `type`, so the same values encode to JSON
for the command line, for history files and for Lua. Construction validates: bad input
raises `AdapterError` with a message that says what is wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union, cast

import msgspec

from .errors import AdapterError

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(("system", "user", "assistant", "tool"))
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ToolStatus = Literal["success", "error", "rejected", "cancelled"]
MAX_ARGUMENT_DEPTH = 20
"""Tool-call arguments nested deeper than this are refused: no tool needs more, and the
editor's channel cannot carry much more (Neovim drops a message nested past 32 levels)."""
MAX_ARGUMENT_CHARS = 4 * 1024 * 1024
"""Tool-call arguments longer than this (as JSON text) are refused: far more than a model
writes in one reply."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (and keys) replaced by U+FFFD.

    pynvim hands bytes from Neovim that are not UTF-8 (a latin-1 buffer, a pasted binary) to
    Python as surrogate escapes, which no encoder takes: kept in a chat's history, they made
    every later request of that chat fail. Lists and tables are walked as deep as they go
    (what Neovim sends nests 32 levels at most)."""
    if isinstance(value, str):
        return value if value.isascii() or not _SURROGATE.search(value) else _SURROGATE.sub("\ufffd", value)
    if isinstance(value, Mapping):
        return {valid_unicode(key): valid_unicode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_unicode(item) for item in value]
    return value


def valid_utf8(data: bytes) -> bytes:
    """`data` with each sequence that is not UTF-8 replaced by U+FFFD (itself when valid)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8")
    return data


_TOO_DEEP = "tool call {name}: arguments nested too deep (more than {limit} levels)"


def nests_within(
    value: Any,
    limit: int,
    *,
    kinds: tuple[type, ...] = (Mapping, list, tuple),
    leaf: Callable[[Any], bool] | None = None,
    leaf_kinds: tuple[type, ...] = (),
) -> bool:
    """Whether containers of `kinds` in `value` nest at most `limit` levels, and `leaf` holds
    for each value of `leaf_kinds` in it (one walk, no recursion)."""
    wanted = kinds + leaf_kinds
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        if not isinstance(item, kinds):
            if leaf is not None and isinstance(item, leaf_kinds) and not leaf(item):
                return False
            continue
        if depth > limit:
            return False
        children = item.values() if isinstance(item, Mapping) else cast("Iterable[Any]", item)
        level.extend((child, depth + 1) for child in children if isinstance(child, wanted))
    return True


def ensure_json_compatible(value: Any, where: str) -> None:
    """Raise AdapterError unless `value` is made only of JSON types (finite numbers, str keys)."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AdapterError(f"{where}: {value!r} is not a JSON number")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            ensure_json_compatible(item, f"{where}[{i}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise AdapterError(f"{where}: key {key!r} is not a string")
            ensure_json_compatible(item, f"{where}.{key}")
        return
    raise AdapterError(f"{where}: {type(value).__name__} is not JSON-compatible")


def check_tool_name(name: str) -> None:
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise AdapterError(f"invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-'")


class TextPart(msgspec.Struct, frozen=True, kw_only=True, tag="text", tag_field="type", omit_defaults=True):
    text: str
    provider_data: dict[str, Any] | None = None


class ImagePart(msgspec.Struct, frozen=True, kw_only=True, tag="image", tag_field="type", omit_defaults=True):
    """An image, inline as base64 `data` or by `url`."""

    media_type: str = "image/png"
    data: str | None = None
    url: str | None = None
    provider_data: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.data and not self.url:
            raise AdapterError("an image needs base64 data or a url")


class ReasoningPart(msgspec.Struct, frozen=True, kw_only=True, tag="reasoning", tag_field="type", omit_defaults=True):
    """Visible reasoning ("thinking") text, with any signature in provider_data."""

    text: str
    provider_data: dict[str, Any] | None = None


class ToolCall(msgspec.Struct, frozen=True, kw_only=True, tag="tool_call", tag_field="type", omit_defaults=True):
    """A tool invocation requested by the model. `arguments` is the parsed JSON object."""

    id: str
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    provider_data: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if not isinstance(self.arguments, dict):
            raise AdapterError(f"tool call {self.name}: arguments must be a JSON object")
        ensure_json_compatible(self.arguments, f"tool call {self.name} arguments")

    @classmethod
    def from_json(cls, *, id: str, name: str, arguments: str | bytes | None) -> ToolCall:
        """Build from a provider's JSON-encoded arguments; empty means `{}`."""
        text = arguments.decode() if isinstance(arguments, bytes) else (arguments or "")
        if not text.strip():
            return cls(id=id, name=name, arguments={})
        if len(text) > MAX_ARGUMENT_CHARS:
            raise AdapterError(
                f"tool call {name}: arguments too large ({len(text)} characters; the limit is {MAX_ARGUMENT_CHARS})"
            )
        try:
            parsed = msgspec.json.decode(text)
            if not isinstance(parsed, dict):
                raise AdapterError(f"tool call {name}: arguments must be a JSON object, got {type(parsed).__name__}")
            if not nests_within(parsed, MAX_ARGUMENT_DEPTH):
                raise AdapterError(_TOO_DEEP.format(name=name, limit=MAX_ARGUMENT_DEPTH))
            return cls(id=id, name=name, arguments=parsed)
        except msgspec.DecodeError as exc:
            raise AdapterError(f"tool call {name}: arguments are not valid JSON ({exc})") from None
        except RecursionError:  # nested past Python's recursion limit: in msgspec, or in the check
            raise AdapterError(_TOO_DEEP.format(name=name, limit=MAX_ARGUMENT_DEPTH)) from None


class ToolResultPart(
    msgspec.Struct, frozen=True, kw_only=True, tag="tool_result", tag_field="type", omit_defaults=True
):
    """What a tool call produced, as sent back to the model."""

    tool_call_id: str
    name: str
    content: str
    status: ToolStatus = "success"
    provider_data: dict[str, Any] | None = None
    # images the tool returned (an MCP tool's), sent as images where the provider takes them in
    # a tool result (Anthropic); elsewhere `content` describes them
    images: tuple[ImagePart, ...] = ()


Part = Union[TextPart, ImagePart, ReasoningPart, ToolCall, ToolResultPart]

_ALLOWED_PARTS: dict[str, tuple[type, ...]] = {
    "system": (TextPart,),
    "user": (TextPart, ImagePart, ToolResultPart),
    "assistant": (TextPart, ReasoningPart, ToolCall),
    "tool": (ToolResultPart,),
}


class Message(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    role: str
    parts: tuple[Part, ...]
    # set on a message that carries shared context (a buffer, a file, rules...): its id in the
    # chat's context list, so that removing the item removes what it sent. Never sent to a provider.
    context_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise AdapterError(f"unknown role {self.role!r}: expected one of {', '.join(sorted(ROLES))}")
        allowed = _ALLOWED_PARTS[self.role]
        for part in self.parts:
            if not isinstance(part, allowed):
                raise AdapterError(f"a {self.role} message cannot hold a {type(part).__name__}")
        if not any(_has_content(part) for part in self.parts):
            raise AdapterError(f"{self.role} message has no content and no tool calls")

    @classmethod
    def of(cls, role: str, text: str) -> Message:
        return cls(role=role, parts=(TextPart(text=text),))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def reasoning(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, ReasoningPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))


def cleaned(message: Message, clean: Callable[[str], str], *, arguments: bool = False) -> Message:
    """`message` with `clean` (a scrubber) applied to its text, reasoning and tool results,
    and with `arguments` its tool calls' arguments too: only in a copy that is sent, never
    in the history the calls run from (a file would be written with `***` in it). Never to
    a part the provider signed (`provider_data`: Anthropic refuses a thinking block whose
    text changed). The same object when nothing changed."""
    parts = tuple(_cleaned_part(part, clean, arguments) for part in message.parts)
    if all(new is old for new, old in zip(parts, message.parts, strict=True)):
        return message
    return msgspec.structs.replace(message, parts=parts)


def _cleaned_part(part: Part, clean: Callable[[str], str], arguments: bool) -> Part:
    if isinstance(part, (TextPart, ReasoningPart)) and part.provider_data is None:
        text = clean(part.text)
        return part if text == part.text else msgspec.structs.replace(part, text=text)
    if isinstance(part, ToolResultPart):
        content = clean(part.content)
        return part if content == part.content else msgspec.structs.replace(part, content=content)
    if arguments and isinstance(part, ToolCall) and part.arguments:
        encoded = msgspec.json.encode(part.arguments).decode()
        scrubbed = clean(encoded)
        if scrubbed == encoded:
            return part
        try:
            kept = msgspec.json.decode(scrubbed)
        except msgspec.DecodeError:  # a secret that held JSON's quoting: none of the arguments sent
            kept = {}
        return msgspec.structs.replace(part, arguments=kept if isinstance(kept, dict) else {})
    return part


def _has_content(part: Part) -> bool:
    if isinstance(part, TextPart):
        return bool(part.text)
    if isinstance(part, ReasoningPart):  # a thinking model may answer with reasoning alone
        return bool(part.text or part.provider_data)
    return True


class Usage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A tool offered to the model: a name, a description and a JSON schema for its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool = False

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        where = f"tool {self.name} schema"
        if not isinstance(self.parameters, dict):
            raise AdapterError(f"{where}: must be a JSON object")
        ensure_json_compatible(self.parameters, where)
        if self.parameters.get("type", "object") != "object":
            raise AdapterError(f"{where}: the top-level type must be 'object'")
        properties = self.parameters.get("properties", {})
        if not isinstance(properties, dict):
            raise AdapterError(f"{where}: 'properties' must be an object")
        required = self.parameters.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise AdapterError(f"{where}: 'required' must be a list of names")
        missing = [r for r in required if r not in properties]
        if missing:
            raise AdapterError(f"{where}: required {missing} not in properties")


def validate_tool_specs(specs: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """Return the specs as a tuple, refusing duplicate names."""
    seen: set[str] = set()
    result = tuple(specs)
    for spec in result:
        if spec.name in seen:
            raise AdapterError(f"duplicate tool name {spec.name!r}")
        seen.add(spec.name)
    return result


__all__ = [
    "ImagePart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolResultPart",
    "ToolSpec",
    "ToolStatus",
    "Usage",
    "ensure_json_compatible",
    "validate_tool_specs",
]
