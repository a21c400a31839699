"""New event types and fields that providers add later are skipped, never fatal."""

import pytest

from codecompanion_py.adapters import resolve
from codecompanion_py.events import FinalEvent
from codecompanion_py.stream.iterators import replay_body

CASES = {
    "anthropic": (
        b'event: message_start\ndata: {"type":"message_start","message":{"content":[],"usage":{"input_tokens":3}},"brand_new":1}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"x","name":"web_search"}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}\n\n'
        b'event: future_event\ndata: {"type":"future_event","payload":[1,2]}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    ),
    "gemini": (
        b'data: {"candidates":[{"content":{"parts":[{"executableCode":{"code":"1+1"}},{"text":"ok","newField":true}],'
        b'"role":"model"},"finishReason":"STOP","safetyRatings":[],"citationMetadata":{}}],"usageMetadata":{"promptTokenCount":1,'
        b'"candidatesTokenCount":1,"totalTokenCount":2,"promptTokensDetails":[]},"modelVersion":"x"}\r\n\r\n'
    ),
    "ollama": (
        b'{"model":"m","message":{"role":"assistant","content":"ok","images":null,"extra":1},"done":false}\n'
        b'{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","context":[1,2]}\n'
    ),
    "openai_responses": (
        b'event: response.web_search_call.in_progress\ndata: {"type":"response.web_search_call.in_progress","output_index":0}\n\n'
        b'event: response.output_text.annotation.added\ndata: {"type":"response.output_text.annotation.added","annotation":{}}\n\n'
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","output_index":1,"delta":"ok","logprobs":[]}\n\n'
        b'event: response.completed\ndata: {"type":"response.completed","response":{"status":"completed","usage":'
        b'{"input_tokens":1,"output_tokens":1,"total_tokens":2},"brand_new":{}}}\n\n'
    ),
    "openai": (
        b'data: {"choices":[{"index":0,"delta":{"content":"ok","audio":null,"new":{}},"logprobs":null}],'
        b'"system_fingerprint":"x","service_tier":"default"}\n\ndata: [DONE]\n\n'
    ),
}


@pytest.mark.parametrize("adapter", sorted(CASES))
def test_unknown_events_and_fields_are_skipped(adapter):
    events = replay_body(resolve(adapter), CASES[adapter])
    assert isinstance(events[-1], FinalEvent), events[-1]
    assert events[-1].message.text == "ok"
