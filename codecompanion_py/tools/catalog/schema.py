"""The OpenAI function-schema shape every catalog tool declares."""

from __future__ import annotations

from typing import Any


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
