"""Lua functions of the user's config, called from the engine.

Lua sends `{__lua_fn = <id>, path = "<dotted config path>"}` for every function in the
setup() table (lua/codecompanion_py/functions.lua); `decode()` turns each into a
`LuaFunction`. Calling one is a question to the editor, the `lua.call` method, answered
later by `editor.reply`: nothing here waits on Neovim.

Route. The editor that carries the question is the one `prepare()` is given: a chat passes
its own (`SinkEditor`), so the call travels through the chat's render sink like any other
question; anything else that prepares an adapter (the model picker, a future inline or cmd
interaction) passes the editor it has. With no editor (the CLI), calling one is a
ConfigError naming the function's config path.

Sync code. Adapter handlers, schema functions and `HTTPAdapter.model` are plain synchronous
Python. `run_sync(editor, fn, ...)` runs such code in a greenlet: a `LuaFunction` called
inside it hands its question to the coroutine that runs `run_sync`, which awaits the answer
and resumes the greenlet with it. So a Lua `form_parameters` is called exactly where a
Python one is, and a Python handler that calls another handler (`format_calls`...) reaches
a Lua override as well. Outside `run_sync`, calling one raises `LuaOutsideContext`.

Cost. One call is one round trip to Neovim. Everything a request needs is resolved once per
request (env, schema, request handlers). A Lua `parse_chat`/`chat_output` (or `parse_tokens`)
is called once per streamed frame: a round trip each, which slows a fast stream down.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec
from greenlet import getcurrent, greenlet

from ..editor_port import Editor
from ..errors import CodeCompanionError, ConfigError
from ..messages import Message, TextPart, ToolCall, ToolResultPart, ToolSpec

REF_KEY = "__lua_fn"
# Handlers called once per streamed frame: everything else is called once per request.
PER_CHUNK = frozenset(
    ("parse_chat", "chat_output", "parse_inline", "inline_output", "parse_tokens", "tokens", "parse_meta")
)
# What a handler may change on `self` (Lua gets a copy; these come back after the call).
_MUTABLE = ("url", "headers", "parameters", "body", "opts")


class LuaOutsideContext(ConfigError):
    """A Lua function was called where the engine cannot reach Neovim."""


_last: dict[int, Any] = {}


class LuaFunction(msgspec.Struct, rename={"id": REF_KEY}, omit_defaults=True):
    """A function that lives in Neovim, called from the engine. Two kinds of reference:

    * a function of the setup() table: `id` is its number in Lua's registry
      (lua/codecompanion_py/functions.lua), `path` its config path for errors. Encoded (as
      any op's data can be), it is its reference again, which Lua turns back into the
      function. `invoke` calls it.
    * a function of a Lua-defined tool (`LuaFunction.of_tool`): `tool` names the tool and
      `path` the function inside it (`cmds.1`, `handlers.setup`, `output.success`,
      `opts.requires_approval`); the orchestrator calls it through tools.lua
      (`tool.invoke`), with the tool's run as `self`."""

    id: int
    path: str
    tool: str | None = None

    @classmethod
    def of_tool(cls, tool: str, path: str) -> LuaFunction:
        return cls(0, path, tool)

    @property
    def _key(self) -> tuple[Any, ...]:
        return (self.tool, self.path) if self.tool is not None else (self.id,)

    @property
    def last(self) -> Any:
        """The last value it returned (what `HTTPAdapter.model` shows before a request);
        kept outside the struct, so that encoding it never carries a key it returned."""
        return _last.get(self.id)

    @last.setter
    def last(self, value: Any) -> None:
        _last[self.id] = value

    def __repr__(self) -> str:
        return f"<Lua function {self.tool + '.' if self.tool else ''}{self.path}>"

    def __deepcopy__(self, memo: dict[int, Any]) -> LuaFunction:
        return self  # a reference: copies of an adapter call the same function

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LuaFunction) and other._key == self._key

    def __hash__(self) -> int:
        return hash(("lua", *self._key))

    @property
    def per_chunk(self) -> bool:
        return self.path.rsplit(".", 1)[-1] in PER_CHUNK

    def __call__(self, *args: Any) -> Any:
        """Call it from sync code run by `run_sync`; its first return value."""
        return self.call_many(*args)[0]

    def call_many(self, *args: Any) -> tuple[Any, ...]:
        """Every value it returns (a Lua `validate` returns `ok, message`), at least one.
        An adapter passed first (`self`) takes back what the function changed on it."""
        back = (1,) if args and _is_adapter(args[0]) and not self.per_chunk else ()
        results, returned = self.call_back(args, back)
        if back:
            apply_back(args[0], returned.get("1"))
        return results

    def call_back(self, args: Sequence[Any], back: Sequence[int]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """From sync code: its return values and the arguments at the 1-based positions
        `back` as the function left them (tables it may change in place)."""
        current = getcurrent()
        if not isinstance(current, _LuaGreenlet) or current.editor is None:
            raise LuaOutsideContext(f"{self.path}: a Lua function cannot be called here (no Neovim to run it)")
        result: tuple[tuple[Any, ...], dict[str, Any]] = _switch_out(self.invoke(current.editor, args, back=back))
        return result

    async def invoke(
        self, editor: Editor | None, args: Sequence[Any], *, back: Iterable[int] = (), context: str | None = None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Call it in Neovim: (its return values, at least one; the `back` arguments after the call)."""
        if editor is None:
            raise LuaOutsideContext(f"{self.path}: a Lua function needs Neovim to run it")
        payload: dict[str, Any] = {"id": self.id, "path": self.path, "args": [to_lua(a) for a in args], "n": len(args)}
        back = list(back)
        if back:
            payload["back"] = back
        if context:
            payload["context"] = context
        try:
            answer = await editor.call("lua.call", payload)
        except CodeCompanionError as error:
            raise ConfigError(str(error)) from None
        answer = answer if isinstance(answer, Mapping) else {}
        results = tuple(decode(r) for r in (answer.get("results") or [None]))
        returned = answer.get("args") or {}
        self.last = results[0]
        return results, dict(returned) if isinstance(returned, Mapping) else {}

    async def call_async(self, editor: Editor | None, *args: Any, context: str | None = None) -> Any:
        """Call it from async code; its first return value."""
        results, _ = await self.invoke(editor, args, context=context)
        return results[0]


# --- sync code that may call Lua ----------------------------------------------------------


class _LuaGreenlet(greenlet):
    def __init__(self, run: Callable[..., Any], parent: greenlet, editor: Editor | None) -> None:
        super().__init__(run, parent)
        self.editor = editor


def _switch_out(awaitable: Any) -> Any:
    """From inside `run_sync`: hand `awaitable` to the coroutine running it, get its result."""
    return getcurrent().parent.switch(awaitable)


async def run_sync(editor: Editor | None, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, where Lua functions can be called (through `editor`); without an editor
    none can be, so `fn` runs as it is."""
    if editor is None:
        return fn(*args)
    child = _LuaGreenlet(fn, getcurrent(), editor)
    child.gr_context = contextvars.copy_context()
    result = child.switch(*args)
    while not child.dead:  # it handed out a question: await it, resume it with the answer
        try:
            answer = await result
        except BaseException as error:  # noqa: BLE001 - cancellation too: it unwinds in the greenlet
            result = child.throw(error)
        else:
            result = child.switch(answer)
    return result


def in_context() -> bool:
    """Whether Lua functions can be called here."""
    current = getcurrent()
    return isinstance(current, _LuaGreenlet) and current.editor is not None


# --- data to and from Lua --------------------------------------------------------------------


def decode(value: Any, path: str = "") -> Any:
    """Data from Lua with each function reference made a `LuaFunction`."""
    if isinstance(value, Mapping):
        if REF_KEY in value:
            return LuaFunction(int(value[REF_KEY]), str(value.get("path") or path or "?"))
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def contains_lua(value: Any) -> bool:
    if isinstance(value, LuaFunction):
        return True
    if isinstance(value, Mapping):
        return any(contains_lua(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_lua(v) for v in value)
    return False


def _is_adapter(value: Any) -> bool:
    return hasattr(value, "schema") and hasattr(value, "env_replaced") and hasattr(value, "to_data")


def adapter_table(adapter: Any) -> dict[str, Any]:
    """The adapter as CodeCompanion passes it to a function (`self`)."""
    table = {key: to_lua(getattr(adapter, key)) for key in adapter._FIELDS if key != "handlers"}
    table["env_replaced"] = to_lua(adapter.env_replaced)
    table["__adapter"] = True
    default = adapter.schema.get("model", {}).get("default")
    # never a call from here: a model function gets this table as its `self`
    model = default.last if isinstance(default, LuaFunction) else default if isinstance(default, str) else None
    if model is not None:
        table["model"] = {"name": model, "vendor": adapter.name}
    return table


def apply_back(adapter: Any, changed: Any) -> None:
    """What a Lua handler changed on `self`, back onto the adapter."""
    if not isinstance(changed, Mapping):
        return
    for key in _MUTABLE:
        value = changed.get(key)
        if key == "url" and isinstance(value, str):
            adapter.url = value
        elif isinstance(value, Mapping) or value == []:
            setattr(adapter, key, decode(dict(value or {})))


def to_lua(value: Any) -> Any:
    """An argument for a Lua function, in the shapes CodeCompanion's functions receive."""
    if isinstance(value, LuaFunction):
        return {REF_KEY: value.id, "path": value.path}
    if _is_adapter(value):
        return adapter_table(value)
    if isinstance(value, Message):
        return cc_message(value)
    if isinstance(value, ToolSpec):
        return {
            "type": "function",
            "function": {"name": value.name, "description": value.description, "parameters": value.parameters},
        }
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return {str(k): to_lua(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_lua(v) for v in value]
    if isinstance(value, msgspec.Struct):
        return to_lua(msgspec.to_builtins(value))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return []  # what Lua cannot hold (a tool-call assembler...): an empty table


def cc_message(message: Message) -> dict[str, Any]:
    """A message as CodeCompanion's handlers see one: role and content, tool calls and the
    call a tool result answers under `tools`."""
    out: dict[str, Any] = {"role": message.role, "content": message.text}
    calls = [p for p in message.parts if isinstance(p, ToolCall)]
    if calls:
        out["tools"] = {
            "calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in calls
            ]
        }
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    if results:
        out["tools"] = {"call_id": results[0].tool_call_id}
        out["content"] = "\n".join(str(r.content) for r in results)
    if not any(isinstance(p, TextPart) for p in message.parts) and not results:
        out["content"] = ""
    return out


# --- per-chunk handlers -----------------------------------------------------------------------


def chunk_parser(fn: LuaFunction, *, streaming: bool, sse: bool) -> Callable[[Any, Any, Any], Any]:
    """A Lua `parse_chat` as the normalizer calls one. It gets what CodeCompanion's gets: a
    streamed SSE frame as `data: <json>`, an NDJSON line as it is, a whole response as
    `{ body = ..., status = 200 }`; tool calls it adds to its `tools` table go into the
    normalizer's assembler."""

    def parse(adapter: Any, data: Any, tools: Any) -> Any:
        text = bytes(data).decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else str(data)
        frame: Any = {"body": text, "status": 200} if not streaming else f"data: {text}" if sse else text
        results, returned = fn.call_back((adapter, frame, []), (3,))
        if tools is not None:
            _add_tool_calls(tools, returned.get("3"))
        return _chat_result(results[0])

    return parse


def _add_tool_calls(assembler: Any, entries: Any) -> None:
    if not isinstance(entries, list):
        return
    for position, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            continue
        nested = entry.get("function")
        function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else entry
        arguments = function.get("arguments")
        if isinstance(arguments, (Mapping, list)):
            arguments = json.dumps(arguments) if arguments else None
        key = entry.get("_index", entry.get("index", entry.get("id", position)))
        assembler.add(key, id=entry.get("id") or None, name=function.get("name") or None, arguments=arguments or None)


def _chat_result(result: Any) -> Any:
    """CodeCompanion's `{status, output}` with what differs from ours made ours: reasoning
    given as `{content = ...}`."""
    if not isinstance(result, Mapping):
        return None
    result = dict(result)
    output = result.get("output")
    if isinstance(output, Mapping):
        output = dict(output)
        reasoning = output.get("reasoning")
        if isinstance(reasoning, Mapping):
            output["reasoning"] = reasoning.get("content")
        result["output"] = output
    elif output == []:
        result["output"] = {}
    return result


def has_lua_handlers(adapter: Any) -> bool:
    return contains_lua(getattr(adapter, "handlers", None) or {})


__all__ = [
    "REF_KEY",
    "LuaFunction",
    "LuaOutsideContext",
    "chunk_parser",
    "contains_lua",
    "decode",
    "has_lua_handlers",
    "in_context",
    "run_sync",
    "to_lua",
]
