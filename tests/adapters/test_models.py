import pytest

from codecompanion_py.adapters import extend, resolve
from codecompanion_py.adapters.models import clear_cache, list_models, parse_models
from codecompanion_py.client import HttpClient
from codecompanion_py.demo.server import Reply, ScriptedServer, json_reply


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def test_both_listing_shapes():
    assert parse_models(b'{"object":"list","data":[{"id":"gpt-4.1"},{"id":"o3"}]}') == ["gpt-4.1", "o3"]
    assert parse_models(b'{"models":[{"name":"models/gemini-2.5-pro"},{"name":"qwen3:8b"}]}') == [
        "gemini-2.5-pro",
        "qwen3:8b",
    ]


async def test_live_list_current_first_cached_and_schema_on_failure(monkeypatch):
    server = ScriptedServer.sequence(
        [
            json_reply({"data": [{"id": "zeta"}, {"id": "alpha"}, {"id": "llama3.1"}]}),
            Reply(status=500, chunks=[b"down"]),
        ]
    )
    await server.start()
    client = HttpClient(retries=0)  # the 500 falls back at once
    try:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        compatible = extend("openai_compatible", {"env": {"url": server.url}})
        assert await list_models(compatible, client) == ["llama3.1", "alpha", "zeta"]
        assert await list_models(compatible, client) == ["llama3.1", "alpha", "zeta"]  # cached
        assert [r.path for r in server.requests] == ["/v1/models"]
        ollama = resolve("ollama")  # same server, another url: the 500 falls back to the schema
        assert await list_models(ollama, client) == ["llama3.1"]
        assert server.requests[1].path == "/api/tags"
    finally:
        await client.aclose()
        await server.close()


async def test_no_key_means_the_schema_list_without_a_request(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = HttpClient()
    try:
        models = await list_models(resolve("anthropic"), client)
    finally:
        await client.aclose()
    assert models[0] == "claude-sonnet-4-5" and "claude-haiku-4-5" in models
