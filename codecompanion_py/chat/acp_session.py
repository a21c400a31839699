"""A chat whose replies come from a coding agent over ACP (Claude Code, Codex, Gemini CLI...).

It offers the same face to the engine as `ChatSession` (submit, stop, busy, sink ops),
so the chat buffer renders an agent the way it renders an HTTP provider: message chunks
as text, thoughts as reasoning, each tool call as one line updated in place, plans as a
checklist. The editor stays in charge: the agent's permission requests go through the
same approval UI as tools, its file reads see unsaved buffers, its writes go through the
edit path of the file tools (the buffer when loaded, else an atomic write, confined to
the project, `FileEdited` fired), and its terminals are real processes here.

The agent starts with the first message and lives until the chat closes; if it dies, the
next message starts a new one (the agent's memory of the conversation is then gone, and
the chat says so).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections.abc import Mapping
from typing import Any

from ..acp.adapters import AcpAdapter
from ..acp.client import CANCELLED, AcpClient
from ..acp.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from ..errors import AgentError, CodeCompanionError, PathRefused
from ..messages import Message
from ..tools.approvals import Approvals
from ..tools.catalog import documents
from ..tools.edits import unified_diff
from ..tools.orchestrator import ChatHandle, Editor, ToolsContext
from ..tools.workspace import Target, Workspace

log = logging.getLogger("codecompanion_py.acp")

_FILE_MENTION = re.compile(r"#\{file:([^}]+)\}")
_IMAGE_MENTION = re.compile(r"#\{image:([^}]+)\}")
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
                ".webp": "image/webp"}
_IMAGE_BYTES = 10_000_000
_CARRIED_CHARS = 20_000
_RENDERED = {"agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update",
             "plan"}


class AcpChatSession:
    def __init__(self, chat_id: Any, adapter: AcpAdapter, *, sink: Any, editor: Editor, workspace: Workspace,
                 history: list[Message] | None = None) -> None:
        self.chat_id = chat_id
        self.adapter = adapter
        self.sink = sink
        self.editor = editor
        self.workspace = workspace
        self.history: list[Message] = list(history or [])  # kept canonical, for a switch to an HTTP adapter
        self._carried = len(self.history)  # messages from before this agent: told to it once
        self.approvals = Approvals()
        self.context = ToolsContext(chat=ChatHandle(), editor=editor, approvals=self.approvals,
                                    workspace=workspace, chat_id=chat_id, surface=sink)
        self.client: AcpClient | None = None
        self.session_id: str | None = None
        self.resume_id: str | None = None  # a session to load instead of starting a new one
        self.task: asyncio.Task[None] | None = None
        self.modes: dict[str, Any] = {}
        self.config_options: list[dict[str, Any]] = []
        self.models: dict[str, Any] = {}
        self.commands: list[dict[str, Any]] = []
        self.title: str | None = None
        self.usage: dict[str, Any] = {}
        self._tool_calls: dict[str, dict[str, Any]] = {}
        self._shown: set[str] = set()
        self._reply: list[str] = []
        self._lost_agent = False
        self._background: set[asyncio.Future[Any]] = set()

    # --- the engine's interface -----------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def adapter_info(self) -> dict[str, Any]:
        return {"name": self.adapter.name, "formatted_name": self.adapter.formatted_name,
                "model": self.current_model(), "type": "acp"}

    def submit(self, text: str) -> asyncio.Task[None] | None:
        if self.busy:
            self.sink.push({"op": "error", "message": "the agent is still working; press q to stop it"})
            return None
        if not text.strip():
            self.sink.push({"op": "done", "status": "empty"})
            return None
        self.task = asyncio.get_running_loop().create_task(self._turn(text))
        return self.task

    def stop(self) -> bool:
        """`q`: ask the agent to cancel the turn; the turn ends when the agent says so."""
        if not self.busy:
            return False
        if self.client is None or self.session_id is None:  # still starting: give up on it
            assert self.task is not None
            self.task.cancel()
        else:
            asyncio.ensure_future(self.client.cancel(self.session_id))
        return True

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.client is not None:
            client, self.client = self.client, None
            await client.close()

    def kill_now(self) -> None:
        if self.client is not None:
            self.client.kill_now()

    # --- a turn ---------------------------------------------------------------------------

    async def _turn(self, text: str) -> None:
        push = self.sink.push
        push({"op": "begin", "adapter": self.adapter_info()})
        info = {"adapter": self.adapter_info(), "interaction": "chat"}
        status, message, tokens = "success", None, None
        self._reply = []
        try:
            await self._ensure_session()
            push({"op": "fire", "event": "RequestStarted", "data": info})
            blocks = await self._prompt_blocks(text)
            self.history.append(Message.of("user", text))
            result = await self.client.prompt(self.session_id, blocks)  # type: ignore[union-attr, arg-type]
            stop = result.get("stopReason")
            if stop == "cancelled":
                status = "stopped"
            elif stop in ("refusal", "max_tokens", "max_turn_requests"):
                status, message = "error", f"{self.adapter.formatted_name} stopped: {stop.replace('_', ' ')}"
            usage = result.get("usage") if isinstance(result.get("usage"), Mapping) else {}
            tokens = usage.get("totalTokens") if isinstance(usage.get("totalTokens"), int) else None
        except asyncio.CancelledError:
            status = "stopped"
        except CodeCompanionError as error:
            status, message = "error", str(error)
            if self.client is not None and not self.client.alive:
                await self._drop_agent()
        finally:
            if self._reply:
                self.history.append(Message.of("assistant", "".join(self._reply)))
            push({"op": "fire", "event": "RequestFinished", "data": {**info, "status": status}})
            done: dict[str, Any] = {"op": "done", "status": status}
            if tokens is None and isinstance(self.usage.get("used"), int):
                tokens = self.usage["used"]
            if tokens is not None:
                done["tokens"] = tokens
            if message:
                done["message"] = message
            push(done)

    async def _ensure_session(self) -> None:
        if self.client is not None and self.session_id is not None:
            return
        push = self.sink.push
        await self._start_agent()
        assert self.client is not None
        if self.resume_id is not None:
            self.session_id, self.resume_id = self.resume_id, None
            self._remember_session(await self.client.load_session(self.session_id))
        else:
            session = await self.client.new_session()
            self.session_id = session["sessionId"]
            self._remember_session(session)
        if self._lost_agent:
            self._lost_agent = False
            push({"op": "show", "title": "**Note**",
                  "text": f"{self.adapter.formatted_name} was restarted: it does not remember the earlier turns."})
        mode = self.adapter.defaults.get("mode")
        if isinstance(mode, str) and mode:
            await self.set_mode(mode)
        model = self.adapter.defaults.get("model")
        if isinstance(model, str) and model and model != self.current_model():
            option = next((o for o in self.options() if o["id"] != "__mode"
                           and any(v["value"] == model for v in o["values"])), None)
            if option is None:
                raise AgentError(f"{self.adapter.formatted_name} offers no model {model!r}")
            await self.set_option(option["id"], model)
        push({"op": "ready", "adapter": self.adapter_info()})
        push({"op": "fire", "event": "ChatACPSession", "data": {"adapter": self.adapter_info(),
                                                                 "session_id": self.session_id}})

    def _remember_session(self, result: Mapping[str, Any]) -> None:
        if isinstance(result.get("modes"), Mapping):
            self.modes = dict(result["modes"])
        if isinstance(result.get("configOptions"), list):
            self.config_options = [o for o in result["configOptions"] if isinstance(o, Mapping)]
        if isinstance(result.get("models"), Mapping):  # outside the schema, sent by Claude and Gemini
            self.models = dict(result["models"])

    async def _drop_agent(self) -> None:
        self._lost_agent = self.session_id is not None
        client, self.client, self.session_id = self.client, None, None
        if client is not None:
            await client.close()

    async def _prompt_blocks(self, text: str) -> list[dict[str, Any]]:
        """The user's text, with `#{file:path}` mentions attached as resources (the buffer's
        text when the file is loaded), `#{image:path}` as images, and a leading `\\command`
        sent as the agent's `/command`."""
        blocks: list[dict[str, Any]] = []
        for raw in dict.fromkeys(m.strip() for m in _IMAGE_MENTION.findall(text)):
            blocks.append(self._image_block(raw))
        for raw in dict.fromkeys(m.strip() for m in _FILE_MENTION.findall(text)):
            target = self.workspace.resolve(raw)
            uri = target.real.as_uri()
            assert self.client is not None
            if self.client.supports("promptCapabilities", "embeddedContext"):
                document = await documents.load(self.context, target)
                blocks.append({"type": "resource", "resource": {"uri": uri, "text": document.text,
                                                                "mimeType": "text/plain"}})
            else:
                blocks.append({"type": "resource_link", "uri": uri, "name": target.relative})
        text = _FILE_MENTION.sub(lambda m: f"`{m.group(1).strip()}`", text)
        text = _IMAGE_MENTION.sub(lambda m: f"`{m.group(1).strip()}`", text)
        names = {c.get("name") for c in self.commands}
        if text.startswith("\\") and text[1:].split(maxsplit=1)[0] in names:
            text = "/" + text[1:]
        return [*self._earlier_conversation(), {"type": "text", "text": text}, *blocks]

    def _image_block(self, raw: str) -> dict[str, Any]:
        assert self.client is not None
        if not self.client.supports("promptCapabilities", "image"):
            raise AgentError(f"{self.adapter.formatted_name} does not accept images")
        target = self.workspace.resolve(raw)
        mime = _IMAGE_TYPES.get(target.real.suffix.lower())
        if mime is None:
            raise PathRefused(f"{target.relative} is not an image this chat can send "
                              f"({', '.join(sorted(_IMAGE_TYPES))})")
        data, _ = self.workspace.read_bytes(target, max_bytes=_IMAGE_BYTES)
        return {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode(),
                "uri": target.real.as_uri()}

    def _earlier_conversation(self) -> list[dict[str, Any]]:
        """The chat so far, once, when the user switched to this agent mid-chat (its end,
        if long: agents have their own context to fill)."""
        carried, self._carried = self.history[:self._carried], 0
        lines = [f"{'User' if m.role == 'user' else 'Assistant'}: {m.text}" for m in carried if m.text]
        if not lines:
            return []
        transcript = "\n\n".join(lines)[-_CARRIED_CHARS:]
        return [{"type": "text", "text": "The conversation so far, with another assistant, for context:\n\n"
                 + transcript}]

    # --- modes, models and options from the chat -------------------------------------------

    def current_model(self) -> str | None:
        for option in self.config_options:
            if option.get("category") == "model" and isinstance(option.get("currentValue"), str):
                return option["currentValue"]
        current = self.models.get("currentModelId")
        return current if isinstance(current, str) else None

    def options(self) -> list[dict[str, Any]]:
        """What the user can change: the agent's config options, and its modes when no
        option already covers them; each {id, name, current, values:[{value, name}]}."""
        found: list[dict[str, Any]] = []
        for option in self.config_options:
            if option.get("type") == "boolean":
                values = [{"value": True, "name": "on"}, {"value": False, "name": "off"}]
            else:
                values = []
                for entry in option.get("options") or []:
                    for choice in entry.get("options", [entry]) if isinstance(entry, Mapping) else []:
                        if isinstance(choice, Mapping) and "value" in choice:
                            values.append({"value": choice["value"], "name": choice.get("name") or choice["value"]})
            found.append({"id": option.get("id"), "name": option.get("name") or option.get("id"),
                          "current": option.get("currentValue"), "values": values})
        if self.modes.get("availableModes") and not any(o.get("category") == "mode" for o in self.config_options):
            found.append({"id": "__mode", "name": "Mode", "current": self.modes.get("currentModeId"),
                          "values": [{"value": m.get("id"), "name": m.get("name") or m.get("id")}
                                     for m in self.modes["availableModes"] if isinstance(m, Mapping)]})
        return found

    async def set_mode(self, mode_id: str) -> None:
        self._require_session()
        await self.client.set_mode(self.session_id, mode_id)  # type: ignore[union-attr, arg-type]
        self.modes["currentModeId"] = mode_id

    async def set_option(self, option_id: str, value: Any) -> None:
        if option_id == "__mode":
            await self.set_mode(str(value))
        else:
            self._require_session()
            result = await self.client.set_config_option(self.session_id, option_id, value)  # type: ignore
            if isinstance(result.get("configOptions"), list):
                self.config_options = [o for o in result["configOptions"] if isinstance(o, Mapping)]
        self.sink.push({"op": "ready", "adapter": self.adapter_info()})

    async def list_sessions(self) -> list[dict[str, Any]]:
        await self._start_agent()
        assert self.client is not None
        return await self.client.list_sessions()

    async def _start_agent(self) -> None:
        """The agent's process, started unless one is running (sessions come and go on it)."""
        if self.client is not None and self.client.alive:
            return
        if self.client is not None:  # dead: make sure nothing of it is left
            await self.client.close()
        self.client = AcpClient(self.adapter, self, cwd=str(self.workspace.root))
        await self.client.start()

    def resume(self, session_id: str) -> None:
        """Load an earlier session of the agent with the next message (or now, if idle)."""
        self.resume_id = session_id
        self.session_id = None

    def _require_session(self) -> None:
        if self.client is None or self.session_id is None:
            raise AgentError(f"{self.adapter.formatted_name} has not started yet: send a message first")

    # --- what the agent tells us (ClientHandler) ---------------------------------------------

    async def session_update(self, params: dict[str, Any]) -> None:
        update = params.get("update")
        if not isinstance(update, Mapping):
            return
        kind = update.get("sessionUpdate")
        push = self.sink.push
        if kind in _RENDERED and not (self.client is not None and self.client.in_turn):
            # after the turn's answer: the chat is the user's again
            log.debug("%s: dropped a late %s", self.adapter.name, kind)
            return
        if kind == "agent_message_chunk":
            text = _content_text(update.get("content"))
            self._reply.append(text)
            push({"op": "text", "text": text})
        elif kind == "agent_thought_chunk":
            push({"op": "reasoning", "text": _content_text(update.get("content"))})
        elif kind == "user_message_chunk":  # history replayed by session/load
            push({"op": "show", "title": "**Earlier, you wrote**", "text": _content_text(update.get("content"))})
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_update(update, created=(kind == "tool_call"))
        elif kind == "plan":
            entries = [e for e in update.get("entries") or [] if isinstance(e, Mapping)]
            push({"op": "plan", "entries": [{"content": str(e.get("content", "")), "status": e.get("status")}
                                            for e in entries]})
        elif kind == "available_commands_update":
            self.commands = [c for c in update.get("availableCommands") or [] if isinstance(c, Mapping)
                             and isinstance(c.get("name"), str)]
            listed = [{"name": c["name"], "description": str(c.get("description") or "")} for c in self.commands]
            push({"op": "commands", "commands": listed})
            push({"op": "fire", "event": "ChatACPCommands", "data": {"commands": [c["name"] for c in listed]}})
        elif kind == "current_mode_update":
            self.modes["currentModeId"] = update.get("currentModeId")
        elif kind == "config_option_update":
            if isinstance(update.get("configOptions"), list):
                self.config_options = [o for o in update["configOptions"] if isinstance(o, Mapping)]
                push({"op": "ready", "adapter": self.adapter_info()})
        elif kind == "session_info_update":
            if isinstance(update.get("title"), str):
                self.title = update["title"]
        elif kind == "usage_update":
            self.usage = {k: v for k, v in update.items() if k != "sessionUpdate"}
        else:
            log.debug("%s: ignored update %r", self.adapter.name, kind)

    def _tool_update(self, update: Mapping[str, Any], *, created: bool) -> None:
        call_id = str(update.get("toolCallId") or "")
        call = self._tool_calls.setdefault(call_id, {"toolCallId": call_id})
        if created:
            call.clear()
            call["toolCallId"] = call_id
        # a partial update: fields present replace; `content` replaces the whole list
        call.update({k: v for k, v in update.items() if k != "sessionUpdate" and v is not None})
        self.sink.push({"op": "agent_tool", "id": call_id, "title": str(call.get("title") or call.get("kind") or
                                                                      "tool"),
                        "status": call.get("status") or "pending",
                        "locations": [loc for loc in call.get("locations") or [] if isinstance(loc, Mapping)]})
        if call.get("status") in ("completed", "failed") and call_id not in self._shown:
            self._shown.add(call_id)
            shown = self._tool_content(call)
            if shown:
                self.sink.push({"op": "show", "text": shown})
            if call.get("status") == "completed" and call.get("kind") in ("edit", "delete", "move"):
                self._reload_buffers(call)

    def _reload_buffers(self, call: Mapping[str, Any]) -> None:
        """Agents that write files themselves (Codex) leave loaded buffers stale: re-read them."""
        paths = {loc.get("path") for loc in call.get("locations") or [] if isinstance(loc, Mapping)}
        paths |= {c.get("path") for c in call.get("content") or [] if isinstance(c, Mapping)}
        paths = sorted(p for p in paths if isinstance(p, str))
        if paths:
            self._spawn(self.editor.call("buffer.reload", {"paths": paths}))

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a failure here is not the turn's

    def _tool_content(self, call: Mapping[str, Any]) -> str:
        parts: list[str] = []
        for item in call.get("content") or []:
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "diff":
                parts.append(unified_diff(self._relative(str(item.get("path", ""))), item.get("oldText") or "",
                                          item.get("newText") or ""))
            elif item.get("type") == "terminal" and self.client is not None:
                output = self.client.terminals.output_of(str(item.get("terminalId")))
                if output:
                    parts.append(output)
            elif item.get("type") == "content":
                parts.append(_content_text(item.get("content")))
        return "\n".join(p.rstrip("\n") for p in parts if p)

    def _relative(self, path: str) -> str:
        root = str(self.workspace.root) + "/"
        return path[len(root):] if path.startswith(root) else path

    async def request_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        tool = params.get("toolCall") if isinstance(params.get("toolCall"), Mapping) else {}
        options = [o for o in params.get("options") or [] if isinstance(o, Mapping) and "optionId" in o]
        if not options:
            return CANCELLED
        title = str(tool.get("title") or self._tool_calls.get(str(tool.get("toolCallId")), {}).get("title")
                    or "use a tool")
        risky = self._risky_paths(tool)
        if self.approvals.yolo and not risky:
            allow = next((o for o in options if o.get("kind") == "allow_once"), None)
            if allow is not None:
                return {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}
        detail = self._tool_content(tool)
        raw = tool.get("rawInput")
        if not detail and isinstance(raw, Mapping) and raw.get("command"):
            command = raw["command"]
            detail = " ".join(command) if isinstance(command, list) else str(command)
        event = {"tool": title, "id": tool.get("toolCallId"), "adapter": self.adapter.name}
        self.sink.push({"op": "fire", "event": "ToolApprovalRequested", "data": event})
        reply = await self.editor.call("approve", {
            "prompt": f"{self.adapter.formatted_name} wants to: {title}",
            "detail": detail, "must_ask": risky,
            "options": [{"label": str(o.get("name") or o["optionId"]), "choice": o["optionId"]} for o in options]})
        choice = reply.get("choice") if isinstance(reply, Mapping) else None
        chosen = next((o for o in options if o["optionId"] == choice), None)
        self.sink.push({"op": "fire", "event": "ToolApprovalFinished",
                        "data": {**event, "choice": chosen.get("kind") if chosen else "cancel"}})
        if chosen is None:
            return CANCELLED
        return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}

    def _risky_paths(self, tool: Mapping[str, Any]) -> str | None:
        """Why this call must be asked even in YOLO mode: a path it touches is protected
        or outside the project."""
        paths = [loc.get("path") for loc in tool.get("locations") or [] if isinstance(loc, Mapping)]
        paths += [c.get("path") for c in tool.get("content") or [] if isinstance(c, Mapping) and c.get("path")]
        for path in paths:
            if not isinstance(path, str):
                continue
            try:
                target = self.workspace.resolve(path)
            except PathRefused:
                return f"{path} is outside the project"
            if target.protected:
                return f"{target.relative} is {target.protected}"
        return None

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        target = self._target(params)
        document = await self._fs(documents.load(self.context, target))
        self.context.reads[str(target.real)] = document.version
        text = document.text
        line, limit = params.get("line"), params.get("limit")
        if isinstance(line, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(int(line) - 1, 0) if isinstance(line, int) else 0
            end = start + int(limit) if isinstance(limit, int) and limit >= 0 else len(lines)
            text = "".join(lines[start:end])
        return {"content": text}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        target = self._target(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise RpcError(INVALID_PARAMS, "fs/write_text_file needs `content` as a string")
        content = content.replace("\r\n", "\n")
        if target.protected:
            await self._confirm_protected(target)
        if target.exists:
            document = await self._fs(documents.load(self.context, target))
            await self._fs(documents.store(self.context, document, content))
        else:
            await self._fs(self._create(target, content))
        return {}

    async def _create(self, target: Target, content: str) -> None:
        self.workspace.create_text(target, content)
        self.context.fire("FileEdited", {"path": str(target.real), "relative": target.relative})

    async def _confirm_protected(self, target: Target) -> None:
        reply = await self.editor.call("approve", {
            "prompt": f"{self.adapter.formatted_name} wants to write {target.relative}", "must_ask":
            f"{target.relative} is {target.protected}",
            "options": [{"label": "Allow this write", "choice": "allow"}, {"label": "Refuse", "choice": "refuse"}]})
        if not isinstance(reply, Mapping) or reply.get("choice") != "allow":
            raise RpcError(INTERNAL_ERROR, f"the user refused the write to {target.relative}")

    def _target(self, params: Mapping[str, Any]) -> Target:
        path = params.get("path")
        if not isinstance(path, str):
            raise RpcError(INVALID_PARAMS, "`path` must be an absolute path string")
        try:
            return self.workspace.resolve(path)
        except PathRefused as error:
            raise RpcError(INTERNAL_ERROR, str(error)) from None

    @staticmethod
    async def _fs(work: Any) -> Any:
        """File work whose refusals the agent should read as errors."""
        try:
            return await work
        except CodeCompanionError as error:
            raise RpcError(INTERNAL_ERROR, str(error)) from None


def _content_text(content: Any) -> str:
    """The text of a content block; other kinds shown by what they are."""
    if not isinstance(content, Mapping):
        return ""
    kind = content.get("type")
    if kind == "text":
        return str(content.get("text") or "")
    if kind == "resource_link":
        return f"[{content.get('name') or content.get('uri')}]({content.get('uri')})"
    if kind == "resource":
        resource = content.get("resource") if isinstance(content.get("resource"), Mapping) else {}
        return str(resource.get("text") or f"[{resource.get('uri', 'resource')}]")
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""
