from codecompanion_py.demo.launch import choose_adapter, setup_lua
from codecompanion_py.demo.server import ScriptedServer, ServerThread, json_reply

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")


def test_a_key_in_the_environment_picks_its_provider(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert choose_adapter() == ("gemini", None)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert choose_adapter() == ("openai", None)


def test_a_local_ollama_is_used_with_its_first_model_else_the_demo(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    tags = json_reply({"models": [{"name": "qwen3:8b"}, {"name": "llama3.1"}]})
    with ServerThread(ScriptedServer.sequence([tags])) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        name, definition = choose_adapter()
        assert name == "ollama" and '"qwen3:8b"' in definition
        assert server.requests[0].path == "/api/tags"
        assert 'adapter = "ollama"' in setup_lua(name, definition)
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    assert choose_adapter() == ("demo", None)
