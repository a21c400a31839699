"""The CLI interaction (`:CodeCompanionCLI`): which agent a call names, the argv its terminal
runs, and the prompt with its editor context written as CLI agents read it (`@path`
references inline, longer context in blocks after the text). Lua owns the terminals
(lua/codecompanion_py/cli.lua); it captures the context and this module words it."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from codecompanion_py.errors import ConfigError

TAG = re.compile(r"#\{(\w+)(?::([^}]*))?\}(?:\{[^}]*\})?")
FENCE = "````"
# editor context that carries code: left out when `opts.send_code` is false
CODE = frozenset({"buffer", "buffers", "diagnostics", "diff", "quickfix", "selection", "this", "file"})


class Agent(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    argv: list[str]
    description: str = "CLI agent"


class Plan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one `:CodeCompanionCLI` or `cli()` does: open the Ask input, open an agent's
    terminal, or send `text` to one (a new one when `new`)."""

    action: str  # "ask" | "open" | "send"
    agent: Agent | None = None
    named: bool = False  # the agent was named (reuse a terminal of it), not the default
    text: str | None = None
    submit: bool = False
    warnings: list[str] = []


def resolve(section: Mapping[str, Any], name: str | None) -> Agent:
    """The agent `name` (else `interactions.cli.agent`) of the config's `interactions.cli`."""
    agents = section.get("agents") if isinstance(section.get("agents"), Mapping) else {}
    assert isinstance(agents, Mapping)
    name = name or (section.get("agent") if isinstance(section.get("agent"), str) else None)
    if not name:
        raise ConfigError("no CLI agent: set interactions.cli.agent, or name one with agent=<name>")
    spec = agents.get(name)
    if not isinstance(spec, Mapping):
        known = ", ".join(sorted(agents)) or "none is configured in interactions.cli.agents"
        raise ConfigError(f"CLI agent `{name}` not found in config (agents: {known})")
    cmd = spec.get("cmd")
    if not isinstance(cmd, str) or not cmd.strip():
        raise ConfigError(f"interactions.cli.agents.{name}.cmd must be the command to run")
    args = spec.get("args") or []
    if not isinstance(args, Sequence) or isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"interactions.cli.agents.{name}.args must be a list of strings")
    program = shutil.which(os.path.expanduser(cmd))
    if program is None:
        raise ConfigError(f"CLI agent `{name}`: the command `{cmd}` is not an executable on PATH")
    description = spec.get("description")
    return Agent(
        name=name, argv=[program, *args], description=description if isinstance(description, str) else "CLI agent"
    )


def parse_words(words: Sequence[str]) -> tuple[dict[str, str], str]:
    """`:CodeCompanionCLI`'s arguments: its `key=value` parameters and the prompt."""
    params: dict[str, str] = {}
    prompt = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and value and key.isidentifier():
            params[key] = value
        else:
            prompt.append(word)
    return params, " ".join(prompt)


def plan(call: Any) -> Plan:
    """The CLI call's plan (calls.CliPrepare): its arguments parsed, its agent resolved, its
    prompt rendered with the context Lua captured."""
    agent_name, prompt = call.agent, call.prompt
    if call.words is not None:
        params, prompt = parse_words(call.words)
        agent_name = params.get("agent", agent_name)
        if prompt.strip() == "Ask":
            return Plan(action="ask", agent=_agent(call, agent_name), named=agent_name is not None)
        if not prompt.strip():
            prompt = "" if call.visual else None
    if call.ask:
        return Plan(action="ask", agent=_agent(call, agent_name), named=agent_name is not None, text=prompt)
    agent = _agent(call, agent_name)
    if prompt is None:
        return Plan(action="open", agent=agent)
    warnings: list[str] = []
    text = render(prompt, call.context, call.cwd, call.send_code, warnings)
    if not call.submit and not text.endswith("\n"):
        text += "\n"  # successive prompts each on a line of their own in the agent's input
    return Plan(
        action="send", agent=agent, named=agent_name is not None, text=text, submit=call.submit, warnings=warnings
    )


def prepare(call: Any) -> dict[str, Any]:
    """`cli.prepare`'s answer to Lua: the plan, or `{error}` (one line for the user)."""
    try:
        return dict(msgspec.to_builtins(plan(call)))
    except ConfigError as error:
        return {"error": str(error)}


def _agent(call: Any, name: str | None) -> Agent:
    return resolve(call.cli, name)


def render(prompt: str, context: Mapping[str, Any], cwd: str, send_code: bool, warnings: list[str]) -> str:
    """`prompt` with each editor-context tag replaced by a short label (a buffer as its
    `@path`); the context itself (a selection's code, diagnostics, a diff...) follows the text
    in blocks. A prompt of tags alone is the blocks alone (else the labels)."""
    this = context.get("this") if isinstance(context.get("this"), Mapping) else None
    captured = context.get("items") if isinstance(context.get("items"), Mapping) else {}
    assert isinstance(captured, Mapping)
    blocks: list[str] = []
    labels: list[str] = []
    only_tags = not TAG.sub("", prompt).strip()

    def replace(match: re.Match[str]) -> str:
        name, target = match.group(1), match.group(2)
        tag = name + (f":{target}" if target is not None else "")
        if name == "viewport" or (name in CODE and not send_code):
            return ""
        if name == "this":
            words = _this(this, cwd)
        elif name == "file" and target:
            words = _at(os.path.join(cwd, target), cwd), None  # the agent reads the file itself
        elif tag in captured:
            got = captured[tag] if isinstance(captured[tag], Mapping) else {}
            warnings.extend(f"#{{{tag}}}: {why}" for why in got.get("problems") or [])
            words = _shared(name, target, got.get("items") or [], cwd)
        else:
            return match.group(0)  # not editor context: the agent reads it as written
        if words is None:
            return ""
        inline, block = words
        if block:
            blocks.append(block)
        if only_tags:
            labels.append(inline)
            return ""
        return inline

    text = TAG.sub(replace, prompt).strip()
    if only_tags and (blocks or labels):
        return "\n".join(blocks or labels)
    if this and this.get("lines") and "#{" not in prompt and send_code:
        text = _selection_block(this, cwd) + text  # a visual selection goes with a plain prompt
    return f"{text}\n\n" + "\n".join(blocks) if blocks else text


def _at(path: str | None, cwd: str) -> str:
    if not path:
        return "@"
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        relative = path
    return "@" + (path if relative.startswith("..") else relative)


def _selection_block(this: Mapping[str, Any], cwd: str) -> str:
    lines = this.get("lines") or []
    return (
        f"- Selected code from {_at(this.get('path'), cwd)} (lines {this.get('first')}-{this.get('last')}):\n"
        f"{FENCE}{this.get('filetype') or ''}\n" + "\n".join(lines) + f"\n{FENCE}\n"
    )


def _this(this: Mapping[str, Any] | None, cwd: str) -> tuple[str, str | None] | None:
    """`#{this}`: the visual selection when there is one, else the current buffer."""
    if not this or not this.get("path"):
        return None
    if this.get("lines"):
        return f"the selected code in {_at(this.get('path'), cwd)}", _selection_block(this, cwd) + "\n"
    return _at(this.get("path"), cwd), None


def _shared(name: str, target: str | None, items: Sequence[Any], cwd: str) -> tuple[str, str | None] | None:
    items = [item for item in items if isinstance(item, Mapping)]
    if not items:
        return None
    first = items[0]
    where = _at(first.get("path"), cwd)
    content = str(first.get("content") or "")
    if name == "buffer":
        return where, None
    if name == "buffers":
        return "the files I've shared: " + ", ".join(_at(item.get("path"), cwd) for item in items), None
    if name == "selection":
        return f"the selected code in {where}", (
            f"- Selected code from {where}:\n{FENCE}{first.get('filetype') or ''}\n{content}\n{FENCE}\n"
        )
    if name == "diagnostics":
        label = str(first.get("label") or "").removeprefix("diagnostics of ").rsplit(" (", 1)[0]
        return f"the diagnostics in @{label}", f"Diagnostics for @{label}:\n{content}\n"
    fenced = {
        "diff": ("the git diff", "- Unstaged changes:", "diff"),
        "messages": ("the Neovim messages", "- Neovim message history:", ""),
        "terminal": ("the terminal output", "- Latest terminal output:", ""),
    }
    if name in fenced:
        inline, heading, lang = fenced[name]
        return inline, f"{heading}\n{FENCE}{lang}\n{content}\n{FENCE}\n"
    if name == "quickfix":
        return "the quickfix list", f"- Quickfix list:\n{content}"
    if name == "code_review":  # the comments' blocks, as a chat's LLM gets them (review/text.py)
        return "my code review comments", f"{content}\n"
    return None
