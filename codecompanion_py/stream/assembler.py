"""Assembles tool calls from streamed fragments keyed by the provider's index or id.

Providers differ: OpenAI sends `id` and `name` once then argument fragments by `index`;
some send whole calls at once, some omit ids, some send a later fragment with an empty
name. The assembler never overwrites a known id or name with an empty one, synthesises
missing ids, treats empty arguments as `{}`, and splits `{...}{...}` (two calls merged
under one index by some servers) into separate calls instead of producing broken JSON.
A fragment with a new id under a key already in use (proxies that give every parallel
call index 0) starts a new call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Hashable
from typing import Any

import msgspec

from ..errors import AdapterError
from ..events import ToolCallEvent
from ..messages import ToolCall


class _PendingCall:
    __slots__ = ("id", "name", "fragments", "position", "provider_data")

    def __init__(self, position: int) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.fragments: list[str] = []
        self.position = position
        self.provider_data: dict[str, Any] | None = None


class ToolCallAssembler:
    """Passed to `parse_chat` as its `tools` argument; handlers call `add()`."""

    def __init__(self) -> None:
        self._calls: dict[Hashable, _PendingCall] = {}
        self._started = 0
        self.events: list[ToolCallEvent] = []  # fragment events since the last drain

    def __bool__(self) -> bool:
        return bool(self._calls)

    def __len__(self) -> int:
        return len(self._calls)

    def add(
        self, key: Hashable, *, id: str | None = None, name: str | None = None, arguments: str | None = None
    ) -> None:
        pending = self._calls.get(key)
        if pending is not None and id and pending.id and id != pending.id:
            self._calls[(key, pending.position)] = self._calls.pop(key)  # finished: its key is reused
            pending = None
        if pending is None:
            pending = self._calls[key] = _PendingCall(self._started)
            self._started += 1
        if id:
            pending.id = id
        if name:
            pending.name = name
        if arguments:
            pending.fragments.append(arguments)
        self.events.append(
            ToolCallEvent(
                id=pending.id or "",
                name=pending.name or "",
                args_fragment=arguments or "",
                index=pending.position,
            )
        )

    def set_provider_data(self, key: Hashable, data: dict[str, Any]) -> None:
        """Opaque data that must go back with this call (e.g. a thought signature)."""
        self._calls[key].provider_data = data

    def drain(self) -> list[ToolCallEvent]:
        events, self.events = self.events, []
        return events

    def finish(self) -> list[ToolCall]:
        """The complete calls, in the order they started."""
        calls: list[ToolCall] = []
        for pending in sorted(self._calls.values(), key=lambda p: p.position):
            if not pending.name:
                raise AdapterError("the provider sent a tool call without a name")
            call_id = pending.id or f"call_{uuid.uuid4().hex[:12]}"
            calls.extend(_complete(call_id, pending.name, "".join(pending.fragments), pending.provider_data))
        return _unique_ids(calls)


def _unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """`calls`, a repeated id made unique (`call_1_2`): the model gave two calls one id, and
    each result must answer its own call."""
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for call in calls:
        call_id, n = call.id, 1
        while call_id in seen:
            n += 1
            call_id = f"{call.id}_{n}"
        seen.add(call_id)
        unique.append(call if call_id == call.id else msgspec.structs.replace(call, id=call_id))
    return unique


def _complete(call_id: str, name: str, raw: str, provider_data: dict[str, Any] | None) -> list[ToolCall]:
    try:
        call = ToolCall.from_json(id=call_id, name=name, arguments=raw)
        return [msgspec.structs.replace(call, provider_data=provider_data) if provider_data else call]
    except AdapterError as error:
        pieces = _split_objects(raw)
        if len(pieces) > 1:  # each through the same checks (size, depth) as a whole call
            return [
                call
                for n, piece in enumerate(pieces)
                for call in _complete(f"{call_id}_{n}" if n else call_id, name, piece, provider_data)
            ]
        # Keep the call so it can be answered with an error; the raw text says what went wrong.
        return [
            ToolCall(
                id=call_id,
                name=name,
                arguments={},
                provider_data={**(provider_data or {}), "invalid_arguments": raw, "error": str(error)},
            )
        ]


def _split_objects(raw: str) -> list[str]:
    """`{"a":1}{"b":2}` -> the text of each object; anything else that is not a run of objects -> []."""
    decoder = json.JSONDecoder()
    pieces: list[str] = []
    position, end = 0, len(raw)
    while position < end:
        while position < end and raw[position].isspace():
            position += 1
        if position == end:
            break
        try:
            value, after = decoder.raw_decode(raw, position)
        except (json.JSONDecodeError, RecursionError):
            return []
        if not isinstance(value, dict):
            return []
        pieces.append(raw[position:after])
        position = after
    return pieces
