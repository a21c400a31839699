"""Gemini (SSE with CRLF framing) and Ollama (native NDJSON), from fixtures written from
the documented wire formats, through the handlers and through a real local server."""

import msgspec

from codecompanion_py.adapters import call_handler, extend, resolve
from codecompanion_py.adapters.http.gemini import unescape_gemini_content
from codecompanion_py.adapters.request import build_request
from codecompanion_py.demo.server import Reply
from codecompanion_py.events import ReasoningEvent, TokenEvent
from codecompanion_py.messages import ImagePart, Message, ReasoningPart, TextPart, ToolCall, ToolResultPart, ToolSpec
from codecompanion_py.stream.iterators import replay_body

from ..streaming import ask, final_of, in_pieces

# --- Gemini ---------------------------------------------------------------------------


def test_gemini_text_with_thoughts_and_the_last_usage(fixture_bytes):
    events = replay_body(resolve("gemini"), fixture_bytes("gemini/text_streaming.txt"))
    assert [e.content for e in events if isinstance(e, ReasoningEvent)] == ["Considering the question."]
    final = final_of(events)
    assert final.message.text == "The capital of France is Paris.\n"
    assert final.finish_reason == "stop"
    # the last usageMetadata is the total (promptTokenCount 13, not 15 or a sum)
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.total_tokens) == (13, 20, 33)
    assert final.usage.reasoning_tokens == 12


def test_gemini_function_calls_get_ids_signatures_and_a_tool_finish_reason(fixture_bytes):
    final = final_of(replay_body(resolve("gemini"), fixture_bytes("gemini/tools_streaming.txt")))
    calls = final.message.tool_calls
    assert [c.arguments for c in calls[:2]] == [{"city": "London"}, {"city": "Paris"}]
    assert all(c.id.startswith("call_") for c in calls) and len({c.id for c in calls}) == 3
    assert calls[0].provider_data == {"gemini": {"thought_signature": "EpwIsig1"}}
    assert calls[1].provider_data is None
    assert calls[2].arguments["content"] == 'def f():\n    return "x"\n'  # double escaping undone
    assert final.finish_reason == "tool_calls"  # Gemini says STOP; the parts say otherwise


def test_gemini_error_frame_and_http_error_body(fixture_bytes):
    events = replay_body(resolve("gemini"), fixture_bytes("gemini/error_streaming.txt"))
    assert [e.content for e in events if isinstance(e, TokenEvent)] == ["Partial"]
    assert events[-1].message == "Gemini: The model is overloaded. Please try again later. (UNAVAILABLE)"


def test_unescape_only_touches_double_escaped_strings():
    assert unescape_gemini_content('a\\nb \\"q\\"') == 'a\nb "q"'
    assert unescape_gemini_content("real\nnewline and \\n kept") == "real\nnewline and \\n kept"
    assert unescape_gemini_content("C:\\\\path") == "C:\\path"


def test_gemini_history_round_trip_keeps_signatures_and_matches_results_by_name(fixture_bytes):
    gemini = resolve("gemini")
    reply = final_of(replay_body(gemini, fixture_bytes("gemini/tools_streaming.txt"))).message
    first = reply.tool_calls[0]
    history = [
        Message.of("system", "be brief"),
        Message(role="user", parts=(TextPart(text="weather?"), ImagePart(data="QUJD", media_type="image/png"))),
        reply,
        Message(role="tool", parts=(ToolResultPart(tool_call_id=first.id, name="get_weather", content="rain"),)),
    ]
    body = call_handler(gemini, "build_messages", history)
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    user, model, results = body["contents"]
    assert user["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": "QUJD"}}
    assert model["role"] == "model"
    assert model["parts"][0] == {
        "functionCall": {"name": "get_weather", "args": {"city": "London"}},
        "thoughtSignature": "EpwIsig1",
    }
    assert results == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "rain"}}}],
    }


async def test_gemini_request_url_headers_and_body(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    gemini = resolve("gemini", model="gemini-2.5-pro")
    ready, request = await build_request(
        gemini,
        [Message.of("user", "hi")],
        tools=[
            ToolSpec(name="t"),
            ToolSpec(name="u", parameters={"type": "object", "properties": {"x": {"type": "string"}}}),
        ],
        settings={"temperature": 0.2},
    )
    assert request.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert request.headers["x-goog-api-key"] == "g-key"
    body = msgspec.json.decode(request.body)
    assert "model" not in body
    assert body["generationConfig"] == {"temperature": 0.2, "thinkingConfig": {"includeThoughts": True}}
    assert body["tools"][0]["functionDeclarations"][0] == {"name": "t", "description": ""}
    assert "parameters" in body["tools"][0]["functionDeclarations"][1]
    plain = resolve("gemini")
    plain.opts["stream"] = False
    assert (await build_request(plain, [Message.of("user", "x")]))[1].url.endswith(":generateContent")


def test_gemini_non_streamed_body(fixture_bytes):
    assert (
        final_of(replay_body(resolve("gemini"), fixture_bytes("gemini/text_no_streaming.json"))).message.text
        == "Hi there"
    )


# --- Ollama ---------------------------------------------------------------------------


def test_ollama_thinking_text_and_counts(fixture_bytes):
    events = replay_body(resolve("ollama"), fixture_bytes("ollama/text_streaming.ndjson"))
    assert [e.content for e in events if isinstance(e, ReasoningEvent)] == ["Let me think."]
    final = final_of(events)
    assert final.message.text == "Dynamic"
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.total_tokens) == (577, 90, 667)


def test_ollama_whole_tool_calls_without_ids(fixture_bytes):
    final = final_of(replay_body(resolve("ollama"), fixture_bytes("ollama/tools_streaming.ndjson")))
    assert [c.arguments["location"] for c in final.message.tool_calls] == ["London, UK", "Paris, FR"]
    assert final.finish_reason == "tool_calls"


def test_ollama_error_line(fixture_bytes):
    events = replay_body(resolve("ollama"), fixture_bytes("ollama/error_streaming.ndjson"))
    assert [e.content for e in events if isinstance(e, TokenEvent)] == ["Part"]
    assert "unexpected EOF" in events[-1].message


def test_ollama_history_round_trip():
    ollama = resolve("ollama")
    call = ToolCall(id="call_x", name="weather", arguments={"location": "Oslo"})
    history = [
        Message(role="user", parts=(TextPart(text="look"), ImagePart(data="QUJD"))),
        Message(role="assistant", parts=(ReasoningPart(text="hm"), call)),
        Message(role="tool", parts=(ToolResultPart(tool_call_id="call_x", name="weather", content="cold"),)),
    ]
    assert call_handler(ollama, "build_messages", history)["messages"] == [
        {"role": "user", "content": "look", "images": ["QUJD"]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "weather", "arguments": {"location": "Oslo"}}}],
        },
        {"role": "tool", "content": "cold", "tool_name": "weather"},
    ]


async def test_ollama_over_real_http_with_ollama_host(fixture_bytes, monkeypatch, scripted_server, client):
    server = await scripted_server(
        in_pieces(fixture_bytes("ollama/text_streaming.ndjson"), 9, "application/x-ndjson"),
        Reply(status=404, chunks=[fixture_bytes("ollama/error_404.json")]),
    )
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))  # host:port, as Ollama allows
    assert final_of(await ask(resolve("ollama"), client)).message.text == "Dynamic"
    sent = server.requests[0]
    assert sent.path == "/api/chat" and sent.json()["stream"] is True and sent.json()["model"] == "llama3.1"
    missing = await ask(resolve("ollama"), client)
    assert 'not found (HTTP 404): model "nope" not found' in missing[0].message


async def test_gemini_over_real_http(fixture_bytes, monkeypatch, scripted_server, client):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    server = await scripted_server(in_pieces(fixture_bytes("gemini/text_streaming.txt"), 13))
    adapter = extend("gemini", {"url": server.url + "/v1beta/models/${model}:${method}"})
    assert final_of(await ask(adapter, client)).message.text == "The capital of France is Paris.\n"
    assert server.requests[0].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
