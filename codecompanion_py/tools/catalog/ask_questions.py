"""ask_questions: CodeCompanion's tool for the model to ask the user up to four questions
in one call, and get the answers back as `**header**: answer` lines.

Each question is shown in the chat, then put through the editor's `approve` question (the
one every tool approval uses): its options to pick from, then "Other" (a typed answer) and
"Skip"; a question without options is a typed answer (`input`); a multiSelect question asks
about each option in turn, as CodeCompanion's does. Cancel stops the questions left. What
the model wrote is shown with its hidden characters escaped and its lengths capped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ToolError
from ..approvals import visible
from ..contract import ToolRun
from .schema import catalog_tool

MAX_QUESTIONS = 4
MAX_OPTIONS = 12
MAX_TEXT = 500  # of a question or an option, as shown
_OTHER, _SKIP = "other", "skip"


class Cancelled(Exception):
    """The user cancelled: the questions left are not asked."""


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return visible(str(value or ""), limit)


def _label(option: Mapping[str, Any]) -> str:
    label = _text(option.get("label"), 120)
    return label + (" (recommended)" if option.get("recommended") is True else "")


def _card(question: Mapping[str, Any], index: int, total: int) -> str:
    """The question as the chat shows it, before the choice is asked."""
    lines = [f"**Question {index}/{total}: {_text(question.get('header'), 40)}**", "", _text(question.get("question"))]
    for option in question.get("options") or []:
        about = _text(option.get("description"), 200)
        lines.append(f"- {_label(option)}" + (f": {about}" if about else ""))
    return "\n".join(lines)


async def _call(self: ToolRun, request: dict[str, Any]) -> Mapping[str, Any]:
    reply = await self.context.editor.call("approve", request)
    reply = reply if isinstance(reply, Mapping) else {}
    if reply.get("choice") == "cancel":
        raise Cancelled
    return reply


async def _typed(self: ToolRun, header: str, card: str | None = None) -> str | None:
    reply = await _call(self, {"prompt": f"{header}, your answer: ", "detail": card, "input": True})
    text = reply.get("text")
    return text.strip() if isinstance(text, str) and text.strip() else None


async def _answer(self: ToolRun, question: Mapping[str, Any], index: int, total: int) -> str | None:
    header = _text(question.get("header"), 40)
    card = _card(question, index, total)
    options = [o for o in question.get("options") or [] if isinstance(o, Mapping)][:MAX_OPTIONS]
    if not options:
        return await _typed(self, header, card)
    if question.get("multiSelect") is True:
        chosen = []
        for number, option in enumerate(options):
            yes_no = [{"label": "Yes", "choice": "yes"}, {"label": "No", "choice": "no"}]
            reply = await _call(
                self,
                {"prompt": f"{header}: {_label(option)}?", "detail": card if not number else None, "options": yes_no},
            )
            if reply.get("choice") == "yes":
                chosen.append(str(option.get("label") or ""))
        return ", ".join(chosen) or None
    offered = [{"label": _label(o), "choice": str(n)} for n, o in enumerate(options)]
    offered += [{"label": "Other: type an answer", "choice": _OTHER}, {"label": "Skip", "choice": _SKIP}]
    reply = await _call(
        self, {"prompt": f"{header}: {_text(question.get('question'), 200)}", "detail": card, "options": offered}
    )
    choice = reply.get("choice")
    if choice == _OTHER:
        return await _typed(self, header)
    if isinstance(choice, str) and choice.isdigit() and int(choice) < len(options):
        return str(options[int(choice)].get("label") or "")
    return None


async def ask(self: ToolRun, args: dict[str, Any], input: Any, output_handler: Any) -> dict[str, Any]:
    questions = [q for q in args.get("questions") or [] if isinstance(q, Mapping)]
    if not questions:
        raise ToolError("no questions were given: send 1 to 4 {header, question, options} objects")
    if len(questions) > MAX_QUESTIONS:
        raise ToolError(f"{len(questions)} questions: ask at most {MAX_QUESTIONS} in one call")
    answers: list[str] = []
    try:
        for index, question in enumerate(questions, start=1):
            answer = await _answer(self, question, index, len(questions))
            answers.append(f"**{question.get('header')}**: {answer or 'No answer provided'}")
    except Cancelled:
        answers.append("The user cancelled the questions" + (" left" if answers else ""))
    self.summary = "\n".join(answers)
    return {"status": "success", "data": self.summary}


def success(self: ToolRun, tools: Any, cmd: Any, stdout: list[Any]) -> None:
    tools.chat.add_tool_output(self, stdout[-1], self.summary)


_STRING = {"type": "string"}
TOOL = catalog_tool(
    "ask_questions",
    "Ask the user questions to clarify what they want, check an assumption, or choose between ways "
    "to do it. Propose a sensible default so the user can confirm quickly.\n\n"
    "Ask only what you cannot find out or reasonably assume yourself; it is for gathering "
    "information, not for reporting progress or problems. When a question has an obvious best "
    "answer, act on it instead.\n\n"
    "IMPORTANT: call this tool at most ONCE per response, with ALL your questions (up to 4).\n\n"
    "Use it to: settle ambiguous requirements before going on; learn the user's preference between "
    "implementations; confirm a decision that changes the outcome.\n"
    "Don't use it: when the code or context answers it; to ask permission to go on or stop; to "
    "confirm what you can decide; to report a problem (try to fix it); when you already called it "
    "in this response.",
    {
        "questions": {
            "type": "array",
            "description": "1 to 4 questions for the user",
            "items": {
                "type": "object",
                "properties": {
                    "header": {**_STRING, "description": "A short label (12 characters at most), unique per question"},
                    "question": {**_STRING, "description": "The whole question as the user reads it"},
                    "multiSelect": {"type": "boolean", "description": "Whether several options may be chosen"},
                    "options": {
                        "type": "array",
                        "description": "Choices to pick from; empty or left out for a typed answer",
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {**_STRING, "description": "The option"},
                                "description": {**_STRING, "description": "What it means, if needed"},
                                "recommended": {"type": "boolean", "description": "The option you recommend"},
                            },
                            "required": ["label"],
                        },
                    },
                },
                "required": ["header", "question"],
            },
        }
    },
    ["questions"],
    cmds=[ask],
    output={"success": success},
    opts={"require_approval_before": False},
)
