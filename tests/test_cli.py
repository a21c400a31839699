"""The command line, run as a user runs it: a real subprocess."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, json_reply, sse_reply

FIXTURES = Path(__file__).parent / "fixtures"


def run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "codecompanion_py.cli", *args], capture_output=True, text=True, timeout=60, env=env
    )


def lines(out):
    return [json.loads(line) for line in out.splitlines()]


def test_replay_prints_canonical_ndjson_with_complete_tool_calls():
    result = run("replay", "--adapter", "openai", str(FIXTURES / "openai/tools_streaming.txt"))
    assert result.returncode == 0, result.stderr
    events = lines(result.stdout)
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_q2Uy", "get_weather", {"city": "London"}),
        ("call_b51i", "get_time", {"zone": "UTC"}),
        ("call_n0args", "list_files", {}),
    ]
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
    reply = sse_reply(
        [
            {"choices": [{"index": 0, "delta": {"content": "Hello"}}]},
            {"choices": [{"index": 0, "delta": {"content": " you"}}]},
        ]
    )
    with ServerThread(ScriptedServer.sequence([reply, reply])) as server:
        text = run("chat", "--adapter", "openai_compatible", "--url", server.url, "--model", "m1", "hi")
        assert text.returncode == 0 and text.stdout == "Hello you\n"
        assert text.stderr == ""  # a model given: nothing to say
        events = run("chat", "--adapter", "openai_compatible", "--url", server.url, "--model", "m1", "--events", "hi")
        assert [e["type"] for e in lines(events.stdout)] == ["token", "token", "final"]
        assert server.requests[0].json()["model"] == "m1"


def hello(text="Hello"):
    return sse_reply([{"choices": [{"index": 0, "delta": {"content": text}}]}])


def routes(table):
    """A scripted server answering by `METHOD path` (404 for anything else)."""

    def respond(request):
        reply = table.get(f"{request.method} {request.path}")
        return reply() if reply else json_reply({"error": {"message": f"no route {request.path}"}}, status=404)

    return ScriptedServer(respond)


def test_chat_without_a_model_uses_the_first_one_the_server_lists_and_says_so():
    server_models = {"object": "list", "data": [{"id": "qwen2.5-coder:7b"}, {"id": "llama3.2"}]}
    with ServerThread(
        routes({"GET /v1/models": lambda: json_reply(server_models), "POST /v1/chat/completions": hello})
    ) as server:
        result = run("chat", "--adapter", "openai_compatible", "--url", server.url, "hi")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Hello\n"
        assert result.stderr == (
            f"codecompanion-py: model qwen2.5-coder:7b (the first of 2 listed at "
            f"{server.url}/v1/models; choose another with --model)\n"
        )
        assert [(r.method, r.path) for r in server.requests] == [
            ("GET", "/v1/models"),
            ("POST", "/v1/chat/completions"),
        ]
        assert server.requests[1].json()["model"] == "qwen2.5-coder:7b"


def test_chat_without_a_model_asks_ollama_for_its_tags():
    tags = {"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}, {"name": "llama3.1:latest"}]}
    body = (FIXTURES / "ollama/text_streaming.ndjson").read_bytes()
    chat_reply = Reply(headers={"content-type": "application/x-ndjson"}, chunks=[body])
    with ServerThread(
        routes({"GET /api/tags": lambda: json_reply(tags), "POST /api/chat": lambda: chat_reply})
    ) as server:
        env = {**os.environ, "OLLAMA_HOST": server.url}
        result = run("chat", "--adapter", "ollama", "hi", env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Dynamic\n"
        assert "model qwen3:8b (the first of 2 listed at" in result.stderr
        assert server.requests[-1].json()["model"] == "qwen3:8b"


def test_chat_without_a_model_falls_back_to_the_default_and_says_why():
    with ServerThread(routes({"POST /v1/chat/completions": hello})) as server:  # no models endpoint: 404
        result = run("chat", "--adapter", "openai_compatible", "--url", server.url, "hi")
        assert result.returncode == 0, result.stderr
        assert result.stderr.startswith(
            "codecompanion-py: model llama3.1 (the adapter's default: the server's model list could not be read:"
        )
        assert len(result.stderr.splitlines()) == 1
        assert server.requests[-1].json()["model"] == "llama3.1"
    with ServerThread(
        routes({"GET /v1/models": lambda: json_reply({"data": []}), "POST /v1/chat/completions": hello})
    ) as server:
        result = run("chat", "--adapter", "openai_compatible", "--url", server.url, "hi")
        assert (
            result.stderr == f"codecompanion-py: model llama3.1 (the adapter's default: {server.url}/v1/models "
            "lists no models)\n"
        )


def test_chat_without_a_model_names_a_hosted_adapters_default():
    with ServerThread(routes({"POST /chat": hello})) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-real"}
        result = run("chat", "--adapter", "openai", "--url", server.url + "/chat", "hi", env=env)
        assert result.returncode == 0, result.stderr
        assert result.stderr == (
            "codecompanion-py: model gpt-4.1 (the openai adapter's default; choose another with --model)\n"
        )
        assert [r.path for r in server.requests] == ["/chat"]  # no models request


@pytest.mark.parametrize(
    "suffix, dropped",
    [("/v1", "/v1"), ("/v1/", "/v1"), ("/v1/chat/completions", "/v1/chat/completions"), ("/v1/chat", "/v1/chat")],
)
def test_a_url_that_already_ends_in_the_adapters_path_is_fixed_with_a_warning(suffix, dropped):
    with ServerThread(routes({"POST /v1/chat/completions": hello})) as server:
        result = run("chat", "--adapter", "openai_compatible", "--url", server.url + suffix, "--model", "m", "hi")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Hello\n"
        assert result.stderr == (
            f"warning: --url {server.url}{dropped} already ends in {dropped}, which the "
            f"openai_compatible adapter appends (/v1/chat/completions); using {server.url}\n"
        )
        assert [r.path for r in server.requests] == ["/v1/chat/completions"]


def test_a_url_with_a_path_of_its_own_is_kept():
    with ServerThread(routes({"POST /proxy/v1/chat/completions": hello})) as server:
        result = run("chat", "--adapter", "openai_compatible", "--url", server.url + "/proxy", "--model", "m", "hi")
        assert (result.returncode, result.stdout, result.stderr) == (0, "Hello\n", "")
    with ServerThread(
        routes({"POST /api/chat": lambda: Reply(chunks=[b'{"message":{"content":"ok"},"done":true}\n'])})
    ) as server:
        result = run("chat", "--adapter", "ollama", "--url", server.url + "/api", "--model", "m", "hi")
        assert result.stdout == "ok\n", result.stderr
        assert "already ends in /api, which the ollama adapter appends (/api/chat)" in result.stderr


def test_appended_path_is_known_only_when_fixed():
    from codecompanion_py import adapters
    from codecompanion_py.cli import appended_path

    assert appended_path(adapters.resolve("openai_compatible")) == "/v1/chat/completions"
    assert appended_path(adapters.resolve("ollama")) == "/api/chat"
    assert appended_path(adapters.resolve("openai")) is None  # --url replaces the whole endpoint
    assert appended_path(adapters.extend("openai_compatible", {"env": {"chat_url": "MY_CHAT_PATH"}})) is None


def test_chat_errors_go_to_stderr_with_exit_status():
    result = run("chat", "--adapter", "openai_compatible", "--url", "http://127.0.0.1:9", "--model", "m", "hi")
    assert result.returncode == 1 and "cannot connect" in result.stderr
    unknown = run("chat", "--adapter", "nope", "hi")
    assert unknown.returncode == 2 and "unknown adapter 'nope'" in unknown.stderr


README = Path(__file__).parents[1] / "README.md"


def readme_command(start):
    """The first line of the README that starts with `start`, less its trailing comment."""
    line = next(line for line in README.read_text().splitlines() if line.startswith(start))
    return line.split("  #")[0].strip()


def as_user(env=None):
    """The environment of a shell where the package is installed and no demo server runs."""
    env = {**(env or os.environ), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("CODECOMPANION_DEMO_URL", None)
    return env


def test_the_readmes_first_cli_example_runs_as_written():
    command = readme_command("codecompanion-py chat")
    assert command == 'codecompanion-py chat --adapter demo "hello"'
    result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60, env=as_user())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Hello from the **demo** adapter") and "> hello" in result.stdout
    assert "the demo adapter's scripted server answers on http://127.0.0.1:" in result.stderr


def test_a_reader_that_leaves_early_ends_the_command_quietly():
    proc = subprocess.Popen(
        [sys.executable, "-m", "codecompanion_py.cli", "chat", "--adapter", "demo", "--events", "hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=as_user(),
    )
    first = json.loads(proc.stdout.readline())  # as `| head -1`: one line, then the pipe closes
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert first == {"type": "token", "content": "Hello"}
    assert proc.returncode == 0
    assert "Traceback" not in err.decode() and "BrokenPipe" not in err.decode()


def test_an_unreachable_server_is_reported_once():
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}"
    result = run("chat", "--adapter", "openai_compatible", "--url", url, "hi")  # no --model: asks for models first
    assert result.returncode == 1
    assert result.stderr.count("cannot connect") == 1, result.stderr
    assert result.stderr.startswith("error: OpenAI Compatible: cannot connect to") and result.stdout == ""
    events = run("chat", "--adapter", "openai_compatible", "--url", url, "--events", "hi")
    assert events.returncode == 1 and events.stderr == ""
    [error] = lines(events.stdout)  # one error event, as a failed request gives
    assert error["type"] == "error" and error["kind"] == "TransportError" and "cannot connect" in error["message"]


def test_chat_help_lists_the_adapters_and_the_default():
    from codecompanion_py.adapters import BUILTIN

    result = run("chat", "--help")
    text = " ".join(result.stdout.split())  # argparse wraps the list
    names = BUILTIN.names("http")
    assert "demo" in names and "openai_compatible" in names
    assert f"an HTTP adapter: {', '.join(names)} (default: openai)" in text


def one_line_error(result, *parts):
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    for part in parts:
        assert part in result.stderr


def test_user_mistakes_are_one_line_and_exit_status_2(tmp_path):
    missing = tmp_path / "nope.txt"
    one_line_error(
        run("replay", "--adapter", "openai", str(missing)), f"error: cannot read {missing}: No such file or directory"
    )
    one_line_error(run("replay", "--adapter", "openai", str(tmp_path)), "Is a directory")
    broken = tmp_path / "broken.json"
    broken.write_text('{"choices": [')
    one_line_error(
        run("replay", "--adapter", "openai", str(broken)),
        f"error: {broken} is not a response body: not valid JSON (",
        "nor SSE or NDJSON",
    )
    (tmp_path / "empty.json").write_text("\n")
    one_line_error(run("replay", "--adapter", "openai", str(tmp_path / "empty.json")), "empty.json is empty")
    one_line_error(run("replay", "--adapter", "nope", str(broken)), "unknown adapter 'nope'; available: anthropic")
    one_line_error(run("chat", "--adapter", "nope", "hi"), "unknown adapter 'nope'")
    one_line_error(
        run("chat", "--adapter", "codex", "hi"),
        "'codex' is a coding agent (ACP), not an HTTP adapter",
        ":CodeCompanionChat adapter=codex",
    )
    one_line_error(run("acp-bridge", "nope"), "unknown bridge adapter 'nope'")
    one_line_error(
        run("chat", "--adapter", "openai_compatible", "--url", "127.0.0.1:8080", "hi"),
        "error: --url 127.0.0.1:8080 is not an http:// or https:// url",
    )


def test_a_broken_stream_is_still_replayed_as_events():
    # a streamed body with a bad frame is what `replay` is for: its error is an event, status 1
    result = run("replay", "--adapter", "openai", str(FIXTURES / "openai/error_streaming.txt"))
    assert result.returncode == 1 and result.stderr == ""


def test_health_reports_keys_without_values():
    env = {**os.environ, "OPENAI_API_KEY": "sk-should-not-print"}
    result = run("health", "--json", env=env)
    report = json.loads(result.stdout)
    assert report["keys"]["OPENAI_API_KEY"] is True
    assert "sk-should-not-print" not in result.stdout
    assert "openai" in report["adapters"] and report["versions"]["httpx"]
    table = run("health", env=env)
    assert table.returncode == 0, table.stderr
    assert any(line.split() == ["OPENAI_API_KEY", "set"] for line in table.stdout.splitlines())
    assert "sk-should-not-print" not in table.stdout


@pytest.mark.parametrize(
    "adapter, fixture, text",
    [
        ("anthropic", "anthropic/thinking_streaming.txt", "Hello there! 👋"),
        ("anthropic", "anthropic/tools_no_streaming.json", "Let me check."),
        ("gemini", "gemini/text_streaming.txt", "The capital of France is Paris.\n"),
        ("gemini", "gemini/text_no_streaming.json", "Hi there"),
        ("ollama", "ollama/text_streaming.ndjson", "Dynamic"),
        ("openai_responses", "openai_responses/incomplete_no_streaming.json", "Cut sho"),
        ("mistral", "openai/text_streaming.txt", "The capital of France is Paris — café ☕."),
    ],
)
def test_replay_works_for_every_wire_format(adapter, fixture, text):
    result = run("replay", "--adapter", adapter, str(FIXTURES / fixture))
    assert result.returncode == 0, result.stdout + result.stderr
    final = lines(result.stdout)[-1]
    assert final["type"] == "final"
    assert "".join(p["text"] for p in final["message"]["parts"] if p["type"] == "text") == text


@pytest.mark.parametrize(
    "adapter, fixture, text, usage",
    [
        ("ollama", "ollama/text_no_streaming_pretty.json", "Hello! How are you today?", [26, 298, 324]),
        ("openai", "openai/text_no_streaming_pretty.json", "Hello! How can I help?", [9, 7, 16]),
    ],
)
def test_replay_of_a_whole_body_indented_over_many_lines(adapter, fixture, text, usage):
    assert (FIXTURES / fixture).read_text().count("\n") > 10
    result = run("replay", "--adapter", adapter, str(FIXTURES / fixture))
    assert result.returncode == 0, result.stdout + result.stderr
    events = lines(result.stdout)
    assert [e["type"] for e in events] == ["token", "usage", "final"]
    assert events[-1]["message"]["parts"] == [{"type": "text", "text": text}]
    assert [events[-1]["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")] == usage
