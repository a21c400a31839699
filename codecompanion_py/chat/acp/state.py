"""What an agent has told us about its session: modes, config options, models, commands.

Kept from `session/new` or `session/load` and from later updates, and turned into the
choices the chat offers (`gm`) and the model it shows in its header.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...ui.ops import AgentCommand, AgentOption, OptionValue

MODE_OPTION = "__mode"  # the modes, offered as an option when no config option covers them


@dataclass
class AgentState:
    modes: dict[str, Any] = field(default_factory=dict)
    config_options: list[dict[str, Any]] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)
    """Outside the ACP schema, sent by Claude and Gemini: currentModelId, availableModels."""
    commands: list[dict[str, Any]] = field(default_factory=list)
    title: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    def remember_session(self, result: Mapping[str, Any]) -> None:
        """The state a `session/new` or `session/load` answer carries."""
        if isinstance(result.get("modes"), Mapping):
            self.modes = dict(result["modes"])
        self.set_config_options(result.get("configOptions"))
        if isinstance(result.get("models"), Mapping):
            self.models = dict(result["models"])

    def set_config_options(self, options: Any) -> bool:
        if not isinstance(options, list):
            return False
        self.config_options = [dict(o) for o in options if isinstance(o, Mapping)]
        return True

    def set_commands(self, commands: Any) -> list[AgentCommand]:
        self.commands = [dict(c) for c in commands or [] if isinstance(c, Mapping) and isinstance(c.get("name"), str)]
        return [AgentCommand(name=c["name"], description=str(c.get("description") or "")) for c in self.commands]

    def command_names(self) -> set[str]:
        return {c["name"] for c in self.commands}

    def current_model(self) -> str | None:
        for option in self.config_options:
            if option.get("category") == "model" and isinstance(option.get("currentValue"), str):
                return str(option["currentValue"])
        current = self.models.get("currentModelId")
        return current if isinstance(current, str) else None

    def options(self) -> list[AgentOption]:
        """What the user can change: the config options, and the modes when no option
        already covers them."""
        found: list[AgentOption] = []
        for option in self.config_options:
            if option.get("type") == "boolean":
                values = [OptionValue(value=True, name="on"), OptionValue(value=False, name="off")]
            else:
                values = []
                for entry in option.get("options") or []:  # flat, or grouped under `options`
                    for choice in entry.get("options", [entry]) if isinstance(entry, Mapping) else []:
                        if isinstance(choice, Mapping) and "value" in choice:
                            values.append(
                                OptionValue(value=choice["value"], name=str(choice.get("name") or choice["value"]))
                            )
            option_id = str(option.get("id"))
            found.append(
                AgentOption(
                    id=option_id,
                    name=str(option.get("name") or option_id),
                    current=option.get("currentValue"),
                    values=tuple(values),
                )
            )
        if self.modes.get("availableModes") and not any(o.get("category") == "mode" for o in self.config_options):
            found.append(
                AgentOption(
                    id=MODE_OPTION,
                    name="Mode",
                    current=self.modes.get("currentModeId"),
                    values=tuple(
                        OptionValue(value=m.get("id"), name=str(m.get("name") or m.get("id")))
                        for m in self.modes["availableModes"]
                        if isinstance(m, Mapping)
                    ),
                )
            )
        return found

    def model_option(self, model: str) -> AgentOption | None:
        """The option that offers `model` as a value."""
        return next(
            (o for o in self.options() if o.id != MODE_OPTION and any(v.value == model for v in o.values)), None
        )

    def model_names(self) -> list[str]:
        names = [
            str(v.value) for o in self.options() if o.id != MODE_OPTION and o.name.lower() == "model" for v in o.values
        ]
        names += [
            str(m["modelId"])
            for m in self.models.get("availableModels") or []
            if isinstance(m, Mapping) and m.get("modelId") and str(m["modelId"]) not in names
        ]
        return names
