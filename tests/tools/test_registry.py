"""Tool config in CodeCompanion's shape: catalog, groups, Lua and Python user tools, mentions."""

import pytest

from codecompanion_py import config
from codecompanion_py.adapters.lua import LuaFunction
from codecompanion_py.errors import ConfigError
from codecompanion_py.tools.registry import ToolSettings, mentions

LUA_CALCULATOR = {
    "description": "Perform calculations",
    "callback": {
        "__lua_tool": True,
        "name": "calculator",
        "schema": {
            "type": "function",
            "function": {
                "name": "calculator",
                "parameters": {"type": "object", "properties": {"num1": {"type": "integer"}}, "required": ["num1"]},
            },
        },
        "system_prompt": "## Calculator Tool",
        "cmds": ["function"],
        "handlers": ["setup", "on_exit"],
        "output": ["success"],
        "opts": {},
    },
    "opts": {"requires_approval": {"__lua": True}},
}


def test_strategies_and_interactions_both_configure_tools():
    loaded = config.load(
        {
            "strategies": {"chat": {"tools": {"calculator": LUA_CALCULATOR}}},
            "interactions": {"chat": {"tools": {"opts": {"default_tools": ["files"]}}}},
        }
    )
    assert "calculator" in loaded.tools.entries
    assert loaded.tools.default_tools == ["files"]


def test_a_lua_tool_becomes_references_to_its_functions():
    settings = ToolSettings.from_config({"calculator": LUA_CALCULATOR})
    definition = settings.definition("calculator")
    assert definition.lua and definition.cmds == [LuaFunction.of_tool("calculator", "cmds.1")]
    assert definition.handlers == {
        "setup": LuaFunction.of_tool("calculator", "handlers.setup"),
        "on_exit": LuaFunction.of_tool("calculator", "handlers.on_exit"),
    }
    assert definition.prompt_text() == "## Calculator Tool"
    assert definition.spec().name == "calculator" and definition.description == "Perform calculations"
    assert settings.config_of("calculator")["opts"]["requires_approval"] == LuaFunction.of_tool(
        "calculator", "config.opts.requires_approval"
    )


def test_a_python_tool_by_module_path():
    settings = ToolSettings.from_config({"weather": {"callback": "tests.tools.sample_tool:weather"}})
    definition = settings.definition("weather")
    assert definition.cmds[0](None, {"city": "Oslo"}, None, None)["data"] == "Sunny in Oslo"
    with pytest.raises(ConfigError, match="cannot load"):
        ToolSettings.from_config({"bad": {"callback": "tests.tools.nope:x"}}).definition("bad")


def test_groups_expand_and_mentions_are_replaced_by_names():
    settings = ToolSettings.from_config({"groups": {"mine": {"tools": ["read_file", "cmd_runner"]}}})
    tools, groups, text = mentions("Use @{mine} and @{grep_search}, not @{nothing}", settings)
    assert tools == ["read_file", "run_command", "grep_search"] and groups == ["mine"]
    assert text == "Use `mine` and `grep_search`, not @{nothing}"
    assert "insert_edit_into_file" in settings.expand("agent") and "run_command" in settings.expand("agent")
    assert "run_command" not in settings.expand("files")


def test_unknown_names_are_left_out_and_said():
    settings = ToolSettings.from_config(
        {"groups": {"g": {"tools": ["nope", "read_file"]}}, "opts": {"default_tools": ["g", "ghost"]}}
    )
    assert settings.problems == [
        "tools: unknown tool or group 'ghost'; it was left out",
        "tools: unknown tool or group 'nope'; it was left out",
    ]
    assert settings.groups["g"]["tools"] == ["read_file"] and settings.default_tools == ["g"]


def test_every_catalog_tool_loads_with_a_valid_spec():
    settings = ToolSettings()
    for name in settings.expand("agent") + ["fetch_webpage"]:
        spec = settings.definition(name).spec()
        assert spec.name == name and spec.description


def test_a_lua_tool_extending_run_command_gets_its_schema_and_run_commands_safety():
    beads = {
        "description": "Beads task management",
        "opts": {"require_approval_before": False},
        "callback": {
            "__lua_tool": True,
            "name": "beads",
            "extends": "cmd_tool",
            "description": "Beads task management",
            "schema": {"properties": {"action": {"type": "string"}}, "required": ["action"]},
            "build_cmd": True,
            "output": ["success"],
            "opts": {"require_approval_before": True},
        },
    }
    definition = ToolSettings.from_config({"beads": beads}).definition("beads")
    spec = definition.spec()
    assert spec.name == "beads" and spec.strict and spec.parameters["required"] == ["action"]
    assert spec.parameters["additionalProperties"] is False
    assert definition.build_cmd == LuaFunction.of_tool("beads", "build_cmd")
    assert definition.output["success"] == LuaFunction.of_tool("beads", "output.success")
    assert "prompt" in definition.output and "setup" in definition.handlers  # run_command's defaults
    assert (
        definition.opts["require_cmd_approval"] and "allowed_in_yolo_mode" not in definition.opts
    )  # the sandbox decides
    with pytest.raises(ConfigError, match="cannot extend 'other'"):
        ToolSettings.from_config({"x": {"callback": {**beads["callback"], "extends": "other"}}}).definition("x")


def test_a_lua_tool_that_failed_to_resolve_is_an_error_naming_why():
    settings = ToolSettings.from_config({"broken": {"callback": {"__lua_error": "cannot find no.such.module"}}})
    with pytest.raises(ConfigError, match="tool 'broken': cannot find no.such.module"):
        settings.definition("broken")


def test_enabled_false_removes_a_tool_and_groups_leave_it_out():
    settings = ToolSettings.from_config(
        {"run_command": {"enabled": False}, "groups": {"g": {"tools": ["run_command"]}}}
    )
    assert "run_command" not in settings.names() and settings.expand("cmd_runner") == []
    assert "run_command" not in settings.expand("agent") and settings.groups["g"]["tools"] == []


def test_tool_replacement_message_and_a_groups_prompt_replace_mentions():
    settings = ToolSettings.from_config(
        {
            "opts": {"tool_replacement_message": "the ${tool} tool"},
            "groups": {"mine": {"prompt": "I give you ${tools}", "tools": ["read_file", "grep_search"]}},
        }
    )
    tools, groups, text = mentions("Use @{read_file}. @{mine}", settings)
    assert text == "Use the read_file tool. I give you read_file, grep_search tools"
    assert tools == ["read_file", "grep_search"] and groups == ["mine"]
