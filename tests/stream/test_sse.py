from hypothesis import given, settings
from hypothesis import strategies as st

from codecompanion_py.stream.ndjson import NDJSONDecoder
from codecompanion_py.stream.sse import SSEDecoder, ServerSentEvent


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.flush()


def test_lf_framing_and_data_stays_bytes():
    assert decode(b'data: {"a":1}\n\ndata: [DONE]\n\n') == [ServerSentEvent(b'{"a":1}'), ServerSentEvent(b"[DONE]")]


def test_crlf_and_lone_cr_framing():
    assert decode(b"data: x\r\n\r\ndata: y\r\rdata: z\n\n") == [
        ServerSentEvent(b"x"), ServerSentEvent(b"y"), ServerSentEvent(b"z")]


def test_cr_at_chunk_end_and_lf_at_next_start_is_one_line_ending():
    assert decode(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [ServerSentEvent(b"a"), ServerSentEvent(b"b")]


def test_comments_event_names_ids_and_fields_without_space():
    stream = (b": keep-alive\n\nevent: content_block_stop\nid: 7\ndata:{\"type\":\"content_block_stop\",\"index\":0   }\n\n"
              b"retry: 100\nunknown: x\ndata\n\n")
    assert decode(stream) == [
        ServerSentEvent(b'{"type":"content_block_stop","index":0   }', event="content_block_stop", id="7"),
        ServerSentEvent(b"", id="7"),  # the last event id persists, as the spec says
    ]


def test_multi_line_data_joins_with_lf_and_a_frame_without_data_is_dropped():
    assert decode(b"data: one\ndata: two\n\nevent: ping\n\n") == [ServerSentEvent(b"one\ntwo")]


def test_bom_is_dropped_and_flush_dispatches_an_unterminated_frame():
    assert decode(b"\xef\xbb\xbfdata: a\n\ndata: tail") == [ServerSentEvent(b"a"), ServerSentEvent(b"tail")]


def test_utf8_split_inside_characters():
    text = "café 日本 🎉".encode()
    stream = b"data: " + text + b"\n\n"
    events = decode(*[stream[i:i + 1] for i in range(len(stream))])
    assert events[0].data.decode() == "café 日本 🎉"


frames_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8)),
        st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12),
                 min_size=1, max_size=3),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(frames=frames_strategy, ending=st.sampled_from([b"\n", b"\r\n", b"\r"]),
       comments=st.booleans(), cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_split_of_the_byte_stream_decodes_the_same(frames, ending, comments, cuts):
    stream = b""
    expected = []
    for event, lines in frames:
        if comments:
            stream += b": comment" + ending
        if event is not None:
            stream += b"event: " + event.encode() + ending
        stream += b"".join(b"data: " + line.encode() + ending for line in lines)
        stream += ending
        expected.append(ServerSentEvent("\n".join(lines).encode(), event=event))
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    assert decode(*chunks) == expected
    assert decode(stream) == expected


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=10), max_size=3), max_size=6),
       crlf=st.booleans(), cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_ndjson_any_split_gives_the_same_lines(lines, crlf, cuts):
    import json

    encoded = [json.dumps(line, ensure_ascii=False).encode() for line in lines]
    stream = b"".join(e + (b"\r\n" if crlf else b"\n") for e in encoded)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    decoder = NDJSONDecoder()
    out = []
    for a, b in zip([0, *points], [*points, len(stream)]):
        out += decoder.feed(stream[a:b])
    out += decoder.flush()
    assert out == encoded


def test_ndjson_blank_lines_and_unterminated_tail():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n\n  \n{"b"') == [b'{"a":1}']
    assert decoder.flush() == [b'{"b"']
