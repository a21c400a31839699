"""What context management cuts and keeps, and when it starts."""

from codecompanion_py import adapters
from codecompanion_py.chat import compaction
from codecompanion_py.chat.compaction import Settings
from codecompanion_py.messages import Message, ToolCall, ToolResultPart


def tool_round(n: int, name: str = "read_file") -> list[Message]:
    call = ToolCall(id=f"c{n}", name=name, arguments={"path": f"f{n}"})
    return [
        Message(role="assistant", parts=(call,)),
        Message(role="tool", parts=(ToolResultPart(tool_call_id=f"c{n}", name=name, content="x" * 1000),)),
    ]


def test_old_tool_output_is_cut_the_last_rounds_and_excluded_tools_keep_theirs():
    history = [Message.of("user", "go"), *tool_round(1), *tool_round(2, "memory"), *tool_round(3), *tool_round(4)]
    removed = compaction.trim_tool_outputs(history, keep_cycles=2, excluded=["memory"])
    outputs = [m.tool_results[0].content for m in history if m.role == "tool"]
    assert removed == 1000
    assert outputs[0].startswith("[output removed to keep the chat within") and outputs[0].endswith("1000 characters]")
    assert outputs[1:] == ["x" * 1000] * 3  # memory's, and the last two rounds
    assert compaction.trim_tool_outputs(history, keep_cycles=2, excluded=["memory"]) == 0  # cut once


def test_triggers_are_shares_of_a_known_window_or_token_counts():
    assert compaction.threshold(0.5, 1000) == 500 and compaction.threshold(300, None) == 300
    assert compaction.threshold(0.85, None) is None  # a share of an unknown window: never
    assert compaction.context_window(adapters.resolve("anthropic")) == 200_000
    mine = adapters.resolve(
        {"name": "mine", "schema": {"model": {"default": "m", "choices": {"m": {"meta": {"context_window": 8000}}}}}}
    )
    assert compaction.context_window(mine) == 8000


def test_the_last_turns_and_their_shared_context_are_kept_whole():
    system = Message.of("system", "be brief")
    context = Message(role="user", parts=Message.of("user", "Context: a.py").parts, context_id="<buf>a.py</buf>")
    history = [
        system,
        Message.of("user", "one"),
        Message.of("assistant", "1"),
        context,
        Message.of("user", "two"),
        Message.of("assistant", "2"),
        Message.of("user", "three"),
    ]
    kept_system, older, kept = compaction.split_for_summary(history)
    assert kept_system == [system] and [m.text for m in older] == ["one", "1"]
    assert kept[0] is context and kept[-1].text == "three"


def test_settings_read_codecompanions_shape_and_say_what_is_wrong():
    settings = Settings.from_config({"editing": {"trigger": 0.5, "exclude_tools": []}, "compaction": {"trigger": "x"}})
    assert settings.editing_trigger == 0.5 and settings.exclude_tools == () and settings.compaction_trigger == 0.85
    assert settings.problems == ["context_management: trigger must be a number >= 0, not 'x'"]
    assert Settings.from_config(False).enabled is False and Settings.from_config({"enabled": False}).enabled is False
