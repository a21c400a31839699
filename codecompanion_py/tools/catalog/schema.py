"""The OpenAI function-schema shape every catalog tool declares, and `catalog_tool`, which
names a tool once for its definition and its schema."""

from __future__ import annotations

from typing import Any

from ..contract import ToolDefinition


def function_schema(
    name: str, description: str, properties: dict[str, Any], required: list[str], *, strict: bool = False
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "strict": strict,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


FILEPATH = {"type": "string", "description": "Path of the file, relative to the project root"}


def catalog_tool(
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    *,
    strict: bool = False,
    **fields: Any,
) -> ToolDefinition:
    """A built-in tool: `fields` are the rest of its `ToolDefinition` (cmds, handlers...)."""
    return ToolDefinition(
        name=name, schema=function_schema(name, description, properties, required, strict=strict), **fields
    )


def widened(tool: ToolDefinition, required: list[str], **properties: dict[str, Any]) -> ToolDefinition:
    """`tool` accepting fewer required fields and the given (older) property forms besides
    the schema the model is shown."""
    parameters = tool.schema["function"]["parameters"]
    tool.accepts = {**parameters, "required": required, "properties": {**parameters["properties"], **properties}}
    return tool
