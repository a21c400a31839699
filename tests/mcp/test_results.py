"""MCP tool results as the LLM gets them: every content kind as text, images kept as images
for a provider that takes them in a tool result (Anthropic), through the orchestrator with
the tests' own server."""

from __future__ import annotations

import sys
from pathlib import Path

from codecompanion_py.adapters import call_handler, resolve
from codecompanion_py.mcp.servers import McpServers, result_text
from codecompanion_py.messages import Message
from tests.tools.test_orchestrator import call, orchestrator

FAKE = str(Path(__file__).parent / "fake_server.py")


async def test_an_image_result_reaches_anthropic_as_an_image_and_others_as_a_description(tmp_path):
    servers = McpServers({"servers": {"fake": {"cmd": [sys.executable, FAKE]}}})
    try:
        definitions, prompt = await servers.tools("fake", cwd=str(tmp_path), notice=lambda event, data: None)
        assert "Use echo to test." in prompt
        shapes = next(d for d in definitions if d.name == "fake_shapes")
        orch, _editor, _surface = orchestrator([shapes], tmp_path, {"choice": "accept"})
        [result] = (await orch.run([call(name="fake_shapes", id="x1")])).results
    finally:
        await servers.close()
    assert result.status == "success" and "[image image/png, 8 bytes]" in result.content
    assert [(image.media_type, image.data) for image in result.images] == [("image/png", "iVBORw0KGgo=")]

    history = [Message.of("user", "shapes?"), Message(role="tool", parts=(result,))]
    body = call_handler(resolve("anthropic"), "build_messages", history)
    blocks = [b for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
    [tool_result] = [b for b in blocks if b.get("type") == "tool_result"]
    assert tool_result["content"][0] == {"type": "text", "text": result.content}
    assert tool_result["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def test_content_kinds_as_text():
    text = result_text(
        {"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, {"type": "odd", "x": 1}]}
    )
    assert text == '[audio audio/wav, 3 bytes]\n\n{"type": "odd", "x": 1}'
    assert result_text({}) == "(the tool returned nothing)"


def test_images_too_large_or_too_many_are_only_described():
    from codecompanion_py.mcp.servers import images_of

    big = {"type": "image", "data": "A" * (9 << 20), "mimeType": "image/png"}
    small = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png\nx"}
    images = images_of({"content": [big] + [small] * 20})
    assert len(images) == 8 and all(image.data == "iVBORw0KGgo=" for image in images)
    assert images[0].media_type == "image/png\\u000ax"
    assert "[image image/png, 7,077,888 bytes]" in result_text({"content": [big]})
