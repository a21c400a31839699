"""The command line, run as a user runs it: a real subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codecompanion_py.demo.server import ScriptedServer, ServerThread, sse_reply

FIXTURES = Path(__file__).parent / "fixtures"


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "codecompanion_py.cli", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def lines(out):
    return [json.loads(line) for line in out.splitlines()]


def test_replay_prints_canonical_ndjson_with_complete_tool_calls():
    result = run("replay", "--adapter", "openai", str(FIXTURES / "openai/tools_streaming.txt"))
    assert result.returncode == 0, result.stderr
    events = lines(result.stdout)
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_q2Uy", "get_weather", {"city": "London"}), ("call_b51i", "get_time", {"zone": "UTC"}),
        ("call_n0args", "list_files", {})]
    assert {e["type"] for e in events} == {"tool_call", "usage", "final"}
    assert events[-1]["finish_reason"] == "tool_calls"


def test_replay_of_a_non_streamed_body_and_an_error_stream():
    ok = run("replay", "--adapter", "openai", str(FIXTURES / "openai/text_no_streaming.json"))
    assert lines(ok.stdout)[-1]["message"]["parts"] == [{"type": "text", "text": "Hello! How can I help?"}]
    bad = run("replay", "--adapter", "openai", str(FIXTURES / "openai/error_streaming.txt"))
    assert bad.returncode == 1
    events = lines(bad.stdout)
    assert events[0] == {"type": "token", "content": "Partial answer"}
    assert events[-1]["type"] == "error" and "Token limit reached" in events[-1]["message"]


def test_chat_streams_text_and_events_from_a_server():
    reply = sse_reply([{"choices": [{"index": 0, "delta": {"content": "Hello"}}]},
                       {"choices": [{"index": 0, "delta": {"content": " you"}}]}])
    with ServerThread(ScriptedServer.sequence([reply, reply])) as server:
        text = run("chat", "--adapter", "openai_compatible", "--url", server.url, "--model", "m1", "hi")
        assert text.returncode == 0 and text.stdout == "Hello you\n"
        events = run("chat", "--adapter", "openai_compatible", "--url", server.url, "--events", "hi")
        assert [e["type"] for e in lines(events.stdout)] == ["token", "token", "final"]
        assert server.requests[0].json()["model"] == "m1"


def test_chat_errors_go_to_stderr_with_exit_status():
    result = run("chat", "--adapter", "openai_compatible", "--url", "http://127.0.0.1:9", "hi")
    assert result.returncode == 1 and "cannot connect" in result.stderr
    unknown = run("chat", "--adapter", "nope", "hi")
    assert unknown.returncode == 2 and "unknown adapter 'nope'" in unknown.stderr


def test_health_reports_keys_without_values():
    import os
    env = {**os.environ, "OPENAI_API_KEY": "sk-should-not-print"}
    result = run("health", env=env)
    report = json.loads(result.stdout)
    assert report["keys"]["OPENAI_API_KEY"] is True
    assert "sk-should-not-print" not in result.stdout
    assert "openai" in report["adapters"] and report["versions"]["httpx"]


@pytest.mark.parametrize("adapter, fixture, text", [
    ("anthropic", "anthropic/thinking_streaming.txt", "Hello there! 👋"),
    ("anthropic", "anthropic/tools_no_streaming.json", "Let me check."),
    ("gemini", "gemini/text_streaming.txt", "The capital of France is Paris.\n"),
    ("gemini", "gemini/text_no_streaming.json", "Hi there"),
    ("ollama", "ollama/text_streaming.ndjson", "Dynamic"),
    ("openai_responses", "openai_responses/incomplete_no_streaming.json", "Cut sho"),
    ("mistral", "openai/text_streaming.txt", "The capital of France is Paris — café ☕."),
])
def test_replay_works_for_every_wire_format(adapter, fixture, text):
    result = run("replay", "--adapter", adapter, str(FIXTURES / fixture))
    assert result.returncode == 0, result.stdout + result.stderr
    final = lines(result.stdout)[-1]
    assert final["type"] == "final"
    assert "".join(p["text"] for p in final["message"]["parts"] if p["type"] == "text") == text


@pytest.mark.parametrize("adapter, fixture, text, usage", [
    ("ollama", "ollama/text_no_streaming_pretty.json", "Hello! How are you today?", [26, 298, 324]),
    ("openai", "openai/text_no_streaming_pretty.json", "Hello! How can I help?", [9, 7, 16]),
])
def test_replay_of_a_whole_body_indented_over_many_lines(adapter, fixture, text, usage):
    assert (FIXTURES / fixture).read_text().count("\n") > 10
    result = run("replay", "--adapter", adapter, str(FIXTURES / fixture))
    assert result.returncode == 0, result.stdout + result.stderr
    events = lines(result.stdout)
    assert [e["type"] for e in events] == ["token", "usage", "final"]
    assert events[-1]["message"]["parts"] == [{"type": "text", "text": text}]
    assert [events[-1]["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")] == usage
