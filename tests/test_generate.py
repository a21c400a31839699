import json

import pytest

from codecompanion_py import generate
from codecompanion_py.adapters import extend
from codecompanion_py.demo.server import Reply, ScriptedServer, ServerThread, json_reply
from codecompanion_py.errors import AdapterError, AuthenticationError
from codecompanion_py.messages import Message, ToolSpec

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "openai"


def served(*replies):
    return ServerThread(ScriptedServer.sequence(list(replies)))


def test_generate_is_deterministic_by_default_and_returns_tool_calls():
    body = json.loads((FIXTURES / "tools_no_streaming.json").read_text())
    with served(json_reply(body), json_reply(body)) as server:
        adapter = extend("openai_compatible", {"env": {"url": server.url}})
        reply = generate(adapter, [Message.of("user", "weather?")], [ToolSpec(name="get_weather")])
        assert [c.arguments for c in reply.tool_calls] == [{"city": "Paris"}, {"city": "Rome"}]
        sent = server.requests[0].json()
        assert (
            sent["temperature"] == 0 and "stream" not in sent and sent["tools"][0]["function"]["name"] == "get_weather"
        )
        generate(adapter, [Message.of("user", "again")], temperature=0.7, seed=3)
        assert server.requests[1].json()["temperature"] == 0.7 and server.requests[1].json()["seed"] == 3


def test_generate_refuses_overrides_of_messages_and_stream():
    with pytest.raises(AdapterError, match="cannot be overridden"):
        generate("openai", [Message.of("user", "x")], stream=True)
    with pytest.raises(AdapterError, match="cannot be overridden"):
        generate("openai", [Message.of("user", "x")], messages=[])


def test_generate_raises_on_malformed_and_failed_responses():
    with served(
        json_reply({"choices": "not a list"}), Reply(status=401, chunks=[b'{"error":{"message":"no"}}'])
    ) as server:
        adapter = extend("openai_compatible", {"env": {"url": server.url}})
        with pytest.raises(AdapterError, match="malformed response"):
            generate(adapter, [Message.of("user", "x")])
        with pytest.raises(AuthenticationError, match="HTTP 401"):
            generate(adapter, [Message.of("user", "x")])
