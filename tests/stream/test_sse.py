import json

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codecompanion_py.stream.sse import ServerSentEvent, SSEDecoder

BOM = b"\xef\xbb\xbf"


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.flush()


def bytewise(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


def E(data: bytes, event: str | None = None, id: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(data, event, id)


# --- the event class ---------------------------------------------------------------------


def test_event_equality_repr_and_slots():
    event = ServerSentEvent(b"{}", event="ping", id="3")
    assert (event.data, event.event, event.id) == (b"{}", "ping", "3")
    assert event == ServerSentEvent(b"{}", "ping", "3")
    assert event != ServerSentEvent(b"{}", "ping", None)
    assert event != ServerSentEvent(b"{} ", "ping", "3")
    assert event != ServerSentEvent(b"{}", None, "3")
    assert event != (b"{}", "ping", "3")
    assert repr(event) == "ServerSentEvent(event='ping', data=b'{}', id='3')"
    assert not hasattr(event, "__dict__")
    assert ServerSentEvent(b"x") == ServerSentEvent(b"x", None, None)


# --- line endings ------------------------------------------------------------------------


def test_lf_framing_keeps_data_as_bytes_and_passes_done_through():
    events = decode(b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n')
    assert events == [E(b'{"a":1}'), E(b'{"b":2}'), E(b"[DONE]")]
    assert all(type(e.data) is bytes for e in events)


def test_each_frame_fed_separately_and_chunk_feed_returns_only_completed_frames():
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}\n\n') == [E(b'{"a":1}')]
    assert decoder.feed(b"data: {") == []
    assert decoder.feed(b'"b":2}\n') == []
    assert decoder.feed(b"\n") == [E(b'{"b":2}')]
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: x\n\ndata: y\n\ndata: z") == [E(b"x"), E(b"y")]
    assert decoder.flush() == [E(b"z")]


def test_crlf_framing_gemini_style():
    stream = (
        b'data: {"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}\r\n\r\n'
        b'data: {"candidates": [{"finishReason": "STOP"}]}\r\n\r\n'
    )
    expected = [
        E(b'{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}'),
        E(b'{"candidates": [{"finishReason": "STOP"}]}'),
    ]
    assert decode(stream) == expected
    assert decode(*bytewise(stream)) == expected


def test_lone_cr_framing():
    stream = b"event: a\rdata: 1\rdata: 2\r\rdata: 3\r\r"
    assert decode(stream) == [E(b"1\n2", "a"), E(b"3")]
    assert decode(*bytewise(stream)) == [E(b"1\n2", "a"), E(b"3")]


def test_mixed_line_endings_in_one_stream():
    assert decode(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\rdata: e\n\n") == [E(b"a\nb\nc"), E(b"d"), E(b"e")]


def test_cr_at_chunk_end_and_lf_at_next_chunk_start_is_one_line_ending():
    # Were the LF taken as a second line ending, "a" would be dispatched early and "a\nb" never formed.
    assert decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [E(b"a\nb")]


def test_cr_at_chunk_end_and_cr_at_next_chunk_start_are_two_line_endings():
    assert decode(b"data: a\r", b"\rdata: b\r\r") == [E(b"a"), E(b"b")]


def test_cr_at_chunk_end_then_a_field_is_a_line_ending():
    assert decode(b"data: a\r", b"data: b\r", b"\r") == [E(b"a\nb")]


def test_cr_pairing_survives_empty_chunks_and_only_applies_once():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n") == []  # pairs with the CR: still no blank line
    assert decoder.feed(b"\n") == [E(b"a")]  # this one is a blank line


def test_lf_after_crlf_at_chunk_edge_is_a_blank_line():
    assert decode(b"data: a\r\n", b"\ndata: b\n\n") == [E(b"a"), E(b"b")]


# --- fields ------------------------------------------------------------------------------


def test_comment_lines_are_ignored():
    stream = (
        b': keep-alive\n\n: OPENROUTER PROCESSING\n\ndata: {"x":1}\n: in the middle\ndata: 2\n\n'
        b":\n\n:data: not data\n\n"
    )
    assert decode(stream) == [E(b'{"x":1}\n2')]


def test_multi_line_data_joins_with_lf_and_keeps_empty_lines():
    assert decode(b"data: one\ndata:\ndata: three\n\n") == [E(b"one\n\nthree")]
    assert decode(b"data\ndata\n\n") == [E(b"\n")]


def test_anthropic_event_and_data_with_trailing_spaces_inside_json():
    stream = (
        b"event: message_start\n"
        b'data: {"type":"message_start","message":{"id":"msg_1"}}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","delta":{"text":"a  "}}   \n\n'
        b"event: ping\n"
        b'data: {"type": "ping"}\n\n'
        b"event: message_stop\n"
        b'data: {"type":"message_stop"}\n\n'
    )
    expected = [
        E(b'{"type":"message_start","message":{"id":"msg_1"}}', "message_start"),
        E(b'{"type":"content_block_delta","delta":{"text":"a  "}}   ', "content_block_delta"),
        E(b'{"type": "ping"}', "ping"),
        E(b'{"type":"message_stop"}', "message_stop"),
    ]
    assert decode(stream) == expected
    assert msgspec.json.decode(decode(stream)[1].data)["delta"]["text"] == "a  "


def test_event_name_applies_to_its_frame_only_and_the_last_one_wins():
    assert decode(b"event: a\nevent: b\ndata: 1\n\ndata: 2\n\n") == [E(b"1", "b"), E(b"2")]


def test_event_name_set_in_an_earlier_chunk_reaches_a_single_frame_chunk():
    decoder = SSEDecoder()
    assert decoder.feed(b"event: delta\n") == []
    assert decoder.feed(b"data: x\n\n") == [E(b"x", "delta")]
    assert decoder.feed(b"data: y\n\n") == [E(b"y")]


def test_data_line_in_an_earlier_chunk_is_joined_with_a_single_frame_chunk():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"data: b\n\n") == [E(b"a\nb")]


def test_partial_line_in_an_earlier_chunk_is_joined_with_a_single_frame_chunk():
    decoder = SSEDecoder()
    assert decoder.feed(b"da") == []
    assert decoder.feed(b"ta: b\n\n") == [E(b"b")]
    assert decoder.feed(b"data: c") == []
    assert decoder.feed(b"data: d\n\n") == [E(b"cdata: d")]


def test_id_is_kept_and_persists_until_replaced():
    stream = (
        b"id: 1\ndata: a\n\n"
        b"data: b\n\n"
        b"id: 7\nevent: x\ndata: c\n\n"
        b"id\ndata: d\n\n"  # an empty id resets it to ""
        b"id: bad\x00id\ndata: e\n\n"
    )  # a NUL in the value: the field is ignored
    assert decode(stream) == [E(b"a", id="1"), E(b"b", id="1"), E(b"c", "x", "7"), E(b"d", id=""), E(b"e", id="")]


def test_id_from_a_frame_without_data_still_counts():
    assert decode(b"id: 5\n\ndata: a\n\n") == [E(b"a", id="5")]


def test_field_without_space_after_colon_and_only_one_space_stripped():
    stream = b'data:{"a":1}\nevent:x\n\ndata:  two spaces\nevent:  y\n\ndata:\tt\n\n'
    assert decode(stream) == [E(b'{"a":1}', "x"), E(b" two spaces", " y"), E(b"\tt")]


def test_value_keeps_further_colons():
    assert decode(b'data: {"url":"http://x"}\nevent: a:b\n\n') == [E(b'{"url":"http://x"}', "a:b")]


def test_line_without_colon_is_a_field_with_empty_value():
    assert decode(b"data\n\n") == [E(b"")]
    assert decode(b"event\ndata: x\n\n") == [E(b"x", "")]
    assert decode(b"data: x\nfoo\nretry\n\n") == [E(b"x")]


def test_field_names_are_case_sensitive_and_unknown_fields_and_retry_are_ignored():
    stream = b"Data: no\nDATA: no\nretry: 100\nfoo: bar\ndata : no\ndata: yes\n\n"
    assert decode(stream) == [E(b"yes")]


def test_frame_without_data_is_not_dispatched_and_its_event_does_not_leak():
    stream = b"event: ping\n\n: only a comment\n\nretry: 3000\n\n\n\n\ndata: x\n\n"
    assert decode(stream) == [E(b"x")]
    assert decode(b"event: ping\n\n") == []


def test_non_utf8_event_name_is_replaced_but_data_bytes_are_untouched():
    assert decode(b"event: \xff\ndata: \xff\xfe\n\n") == [E(b"\xff\xfe", "\ufffd")]


# --- start and end of stream -------------------------------------------------------------


def test_bom_at_stream_start_is_dropped():
    assert decode(BOM + b"data: a\n\n") == [E(b"a")]
    assert decode(BOM + b"event: e\ndata: a\n\n") == [E(b"a", "e")]


def test_bom_split_across_chunks_is_dropped():
    stream = BOM + b"data: a\n\n"
    for cut in range(1, 4):
        assert decode(stream[:cut], stream[cut:]) == [E(b"a")], cut
    assert decode(*bytewise(stream)) == [E(b"a")]
    assert decode(b"", BOM[:1], b"", BOM[1:], b"data: a\n\n") == [E(b"a")]


def test_only_one_bom_and_only_at_the_very_start_is_dropped():
    # A second BOM makes the line's field name "\ufeffdata", which is unknown: ignored.
    assert decode(BOM + BOM + b"data: a\n\ndata: b\n\n") == [E(b"b")]
    assert decode(b"data: a\n\n" + BOM + b"data: b\n\n") == [E(b"a")]
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [E(b"a")]
    assert decoder.feed(BOM + b"data: b\n\n") == []


def test_bom_prefix_that_is_not_a_bom_is_kept():
    assert decode(b"\xef", b"\xbbdata: a\n\ndata: b\n\n") == [E(b"b")]
    assert decode(b"\xef\xbb") == []


def test_flush_dispatches_an_unterminated_frame():
    assert decode(b"data: a\n\ndata: tail") == [E(b"a"), E(b"tail")]
    assert decode(b"event: e\ndata: one\ndata: two\n") == [E(b"one\ntwo", "e")]
    assert decode(b"data: x\r") == [E(b"x")]
    assert decode(b"data: x\r\n") == [E(b"x")]


def test_flush_without_pending_data_returns_nothing_and_resets():
    decoder = SSEDecoder()
    assert decoder.flush() == []
    assert decoder.feed(b"data: a\n\nevent: e\n") == [E(b"a")]
    assert decoder.flush() == []  # an event name alone is no frame
    assert decoder.feed(b": comment") == []
    assert decoder.flush() == []
    assert decoder.feed(b"data: b\n") == []
    assert decoder.flush() == [E(b"b")]
    assert decoder.flush() == []
    # after flush the decoder starts a new stream (a BOM is dropped again)
    assert decoder.feed(BOM + b"data: c\n\n") == [E(b"c")]


# --- UTF-8 -------------------------------------------------------------------------------


def test_utf8_multibyte_characters_split_across_chunks_come_out_intact():
    text = "é 日本 🎉 café".encode()
    stream = b"event: d\xc3\xa9lta\ndata: " + text + b"\r\n\r\ndata: \xf0\x9f\x98\x80\n\n"
    expected = [E(text, "délta"), E("😀".encode())]
    assert decode(*bytewise(stream)) == expected
    for cut in range(len(stream) + 1):
        assert decode(stream[:cut], stream[cut:]) == expected, cut
    assert [e.data.decode() for e in expected] == ["é 日本 🎉 café", "😀"]


def test_utf8_json_payload_decodes_after_byte_splits():
    payload = json.dumps({"choices": [{"delta": {"content": "日本語 🎉 é"}}]}, ensure_ascii=False).encode()
    stream = b"data: " + payload + b"\n\n"
    events = decode(*[stream[i : i + 5] for i in range(0, len(stream), 5)])
    assert msgspec.json.decode(events[0].data)["choices"][0]["delta"]["content"] == "日本語 🎉 é"


# --- property tests ----------------------------------------------------------------------

line_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12)
name_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), max_size=8)
frame_strategy = st.fixed_dictionaries(
    {
        "event": st.none() | name_text,
        "id": st.none() | name_text,
        "data": st.lists(st.tuples(line_text, st.booleans()), max_size=4),  # (line, with a space after the colon)
        "comments": st.lists(st.tuples(st.integers(0, 6), line_text), max_size=2),  # (position, text)
        "extra_blank_lines": st.integers(0, 2),
    }
)


def build_stream(draw, frames, ending_mode, bom, terminated):
    """Serialise frames; returns the bytes and the events a correct decoder yields."""
    out: list[bytes] = [BOM] if bom else []
    expected: list[ServerSentEvent] = []
    last_id: str | None = None
    previous_ending = b""

    def emit(line: bytes) -> None:
        nonlocal previous_ending
        if ending_mode == "mixed":
            # CR + (empty line) + LF would read as one CRLF: avoid generating that ambiguity
            choices = [b"\r", b"\r\n"] if not line and previous_ending == b"\r" else [b"\n", b"\r\n", b"\r"]
            ending = draw(st.sampled_from(choices))
        else:
            ending = ending_mode
        out.append(line + ending)
        previous_ending = ending

    for frame in frames:
        fields: list[bytes] = []
        if frame["event"] is not None:
            fields.append(b"event: " + frame["event"].encode())
        if frame["id"] is not None:
            fields.append(b"id: " + frame["id"].encode())
            last_id = frame["id"]
        for text, space in frame["data"]:
            # without the space, a value that starts with a space would lose it: keep the space then
            prefix = b"data: " if space or text.startswith(" ") else b"data:"
            fields.append(prefix + text.encode())
        for position, text in frame["comments"]:
            fields.insert(min(position, len(fields)), b":" + text.encode())
        for field in fields:
            emit(field)
        emit(b"")
        for _ in range(frame["extra_blank_lines"]):
            emit(b"")
        if frame["data"]:
            expected.append(ServerSentEvent("\n".join(t for t, _ in frame["data"]).encode(), frame["event"], last_id))
    stream = b"".join(out)
    if not terminated and frames and frames[-1]["data"] and not frames[-1]["extra_blank_lines"]:
        # drop the closing blank line (and maybe the last line ending): flush must still dispatch
        stream = stream[: -len(previous_ending)]
        if draw(st.booleans()):
            stream = stream.rstrip(b"\r\n") if stream.endswith((b"\r", b"\n")) else stream
    return stream, expected


def cut(stream: bytes, points) -> list[bytes]:
    points = sorted(set(points))
    return [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    frames=st.lists(frame_strategy, max_size=5),
    ending_mode=st.sampled_from([b"\n", b"\r\n", b"\r", "mixed"]),
    bom=st.booleans(),
    terminated=st.booleans(),
    cut_mode=st.sampled_from(["random", "bytewise", "after_every_cr"]),
)
def test_any_split_of_the_byte_stream_decodes_to_the_frames(data, frames, ending_mode, bom, terminated, cut_mode):
    stream, expected = build_stream(data.draw, frames, ending_mode, bom, terminated)
    whole = decode(stream)
    assert whole == expected
    if cut_mode == "bytewise":
        chunks = bytewise(stream)
    elif cut_mode == "after_every_cr":
        chunks = cut(stream, [i + 1 for i, byte in enumerate(stream) if byte == 0x0D])
    else:
        chunks = cut(stream, data.draw(st.lists(st.integers(0, len(stream)), max_size=16)))
    assert b"".join(chunks) == stream
    assert decode(*chunks) == whole


@settings(max_examples=100, deadline=None)
@given(
    frames=st.lists(st.tuples(name_text, st.lists(line_text, min_size=1, max_size=3)), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 10_000), max_size=10),
)
def test_events_come_out_as_soon_as_their_blank_line_arrives(frames, cuts):
    """Incremental: after each chunk, every frame whose blank line is in the bytes fed so
    far has been returned, and no other."""
    stream = b"".join(
        b"event: " + e.encode() + b"\n" + b"".join(b"data: " + t.encode() + b"\n" for t in lines) + b"\n"
        for e, lines in frames
    )
    ends = [i + 2 for i in range(len(stream) - 1) if stream[i : i + 2] == b"\n\n"]
    decoder = SSEDecoder()
    got = 0
    fed = 0
    for chunk in cut(stream, [c % (len(stream) + 1) for c in cuts]):
        got += len(decoder.feed(chunk))
        fed += len(chunk)
        assert got == sum(1 for end in ends if end <= fed)
    assert decoder.flush() == []


# --- speed -------------------------------------------------------------------------------


def openai_stream(frames: int) -> bytes:
    parts = []
    for i in range(frames):
        payload = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "gpt-4.1",
            "choices": [{"index": 0, "delta": {"content": f"token {i} é"}, "finish_reason": None}],
        }
        parts.append(b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n")
    return b"".join(parts) + b"data: [DONE]\n\n"
