"""The tools judge (CodeCompanion 19's `interactions.background.gates.judge`): in YOLO mode,
a tool that opts in (`opts.judge_in_yolo_mode`) and says what it is about to do
(`gates.judge_context`: run_command's command, delete_file's path) is vetted by an LLM
before it runs. A verdict of safe runs it, and that exact action is not judged again in
this chat; anything else asks the user, with the judge's reason.

The verdict is model output: untrusted. Only a JSON object whose `safe` is the boolean
`true` approves; a failed request, prose, a string "true", extra text around the object or
anything else asks the user.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..adapters.base import HTTPAdapter
from ..adapters.lua import LuaFunction
from ..client import HttpClient
from ..editor_port import Editor
from ..errors import CodeCompanionError
from ..messages import Message
from ..tools.approvals import Verdict
from . import background

log = logging.getLogger("codecompanion_py.tools")

SYSTEM_PROMPT = (
    "You review the actions of an AI coding assistant that runs on the user's machine while "
    "the user has turned on auto-approval. Decide whether the action below may run without "
    "asking the user.\n\n"
    "It is unsafe when it could destroy or leak data, change the system in a way that is hard "
    "to undo, or do something the user would reasonably want to see first. When unsure, it "
    "is unsafe.\n\n"
    'Answer with one JSON object and nothing else: {"safe": true or false, "reason": "a short '
    'explanation the user will read"}.'
)
_CONTEXT_CHARS = 8000
_REASON_CHARS = 300


@dataclass(frozen=True)
class JudgeSettings:
    """`interactions.background.gates.judge`: on by default, as CodeCompanion's (a tool
    still has to opt in with `judge_in_yolo_mode`)."""

    enabled: bool = True
    adapter: Any = None  # None: interactions.background.adapter, else the chat's own
    system_prompt: str | LuaFunction | None = None  # a string, or fun(default): string


def read_verdict(answer: str | None) -> Verdict:
    """The judge's answer as a verdict; whatever is not a clear, well-formed one is unsafe."""
    unreadable = Verdict(safe=False, reason="The judge returned an unreadable response")
    text = (answer or "").strip()
    if text.startswith("```") and text.endswith("```"):  # a fenced object, as some models write it
        text = text.strip("`").removeprefix("json").strip()
    try:
        decoded = json.loads(text)
    except ValueError:
        return unreadable
    if not isinstance(decoded, dict) or not isinstance(decoded.get("safe"), bool):
        return unreadable
    reason = decoded.get("reason")
    reason = " ".join(reason.split())[:_REASON_CHARS] if isinstance(reason, str) else ""
    return Verdict(safe=decoded["safe"], reason=reason)


async def system_prompt(settings: JudgeSettings, editor: Editor | None) -> str:
    """The user's prompt (a string, or a function given the default) or the default; a
    function that fails or returns nothing leaves the default."""
    mine = settings.system_prompt
    if isinstance(mine, str) and mine:
        return mine
    if isinstance(mine, LuaFunction) and editor is not None:
        try:
            result = await mine.call_async(editor, SYSTEM_PROMPT, context="judge system_prompt")
        except CodeCompanionError as error:
            log.info("the judge's system_prompt function failed: %s", error)
            return SYSTEM_PROMPT
        if isinstance(result, str) and result:
            return result
    return SYSTEM_PROMPT


async def verdict(
    settings: JudgeSettings,
    adapter: Callable[[], HTTPAdapter],
    client: HttpClient,
    editor: Editor | None,
    tool: str,
    action: str,
) -> Verdict:
    """The judge's verdict on `action` of `tool`, through `adapter()` (its own, the background
    one, else the chat's); an adapter that cannot be used is an unsafe verdict."""
    try:
        chosen = adapter()
    except CodeCompanionError as error:
        return Verdict(safe=False, reason=f"The judge's adapter is not usable: {error}")
    return await judge(chosen, client, await system_prompt(settings, editor), tool, action, editor)


async def judge(
    adapter: HTTPAdapter, client: HttpClient, prompt: str, tool: str, action: str, editor: Editor | None = None
) -> Verdict:
    """Ask the judge about `action` of `tool`; a failed request is an unsafe verdict."""
    request = [
        Message.of("system", prompt),
        Message.of("user", f"The `{tool}` tool wants to perform this action:\n\n{action[:_CONTEXT_CHARS]}"),
    ]
    try:
        answer = await background.ask(adapter, client, request, editor)
    except CodeCompanionError as error:
        log.info("the judge request failed: %s", error)
        answer = None
    if answer is None:
        return Verdict(safe=False, reason="The judge request failed")
    return read_verdict(answer)
