import json

from hypothesis import given, settings
from hypothesis import strategies as st

from codecompanion_py.stream.ndjson import NDJSONDecoder


def split_all(*chunks: bytes) -> list[bytes]:
    decoder = NDJSONDecoder()
    lines: list[bytes] = []
    for chunk in chunks:
        lines += decoder.feed(chunk)
    return lines + decoder.flush()


def test_complete_lines_come_out_as_bytes_not_decoded():
    decoder = NDJSONDecoder()
    lines = decoder.feed(b'{"a":1}\n{"b":[2]}\n')
    assert lines == [b'{"a":1}', b'{"b":[2]}']
    assert all(type(line) is bytes for line in lines)
    assert decoder.flush() == []


def test_incomplete_line_waits_for_its_newline():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"message":{"con') == []
    assert decoder.feed(b'tent":"Hi"}}') == []
    assert decoder.feed(b'\n{"done":') == [b'{"message":{"content":"Hi"}}']
    assert decoder.feed(b"") == []
    assert decoder.feed(b"true}\n") == [b'{"done":true}']
    assert decoder.flush() == []


def test_crlf_blank_and_whitespace_lines():
    assert split_all(b'{"a":1}\r\n\r\n  \n\t\r\n {"b":2} \r\n\n') == [b'{"a":1}', b'{"b":2}']


def test_crlf_split_between_cr_and_lf():
    assert split_all(b'{"a":1}\r', b'\n{"b":2}\r', b"\n") == [b'{"a":1}', b'{"b":2}']


def test_flush_returns_the_unterminated_last_line_once():
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert decoder.feed(b":2}  ") == []
    assert decoder.flush() == [b'{"b":2}']
    assert decoder.flush() == []
    assert decoder.feed(b'{"c":3}\n') == [b'{"c":3}']  # nothing left over from before


def test_flush_of_whitespace_only_tail_is_empty():
    assert split_all(b'{"a":1}\n  \r') == [b'{"a":1}']
    assert split_all(b"") == []


def test_utf8_split_inside_characters_and_newlines_escaped_in_strings():
    line = json.dumps({"content": "é 日本 🎉\nnext"}, ensure_ascii=False).encode()
    stream = line + b"\n" + line + b"\n"
    lines = split_all(*[stream[i : i + 1] for i in range(len(stream))])
    assert lines == [line, line]
    assert json.loads(lines[0])["content"] == "é 日本 🎉\nnext"


def test_long_line_in_many_small_chunks():
    line = b'{"x":"' + b"y" * 50_000 + b'"}'
    assert split_all(*[line[i : i + 7] for i in range(0, len(line), 7)], b"\n", b"{}") == [line, b"{}"]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    records=st.lists(
        st.tuples(
            json_values,
            st.sampled_from([b"\n", b"\r\n"]),  # line ending
            st.sampled_from([b"", b" ", b"\t", b"  "]),  # padding around the JSON
            st.lists(st.sampled_from([b"", b" ", b"\r", b"\t "]), max_size=2),
        ),  # blank lines after
        max_size=8,
    ),
    ascii_only=st.booleans(),
    terminated=st.booleans(),
)
def test_any_split_gives_the_same_lines(data, records, ascii_only, terminated):
    stream = b""
    expected = []
    for value, ending, pad, blanks in records:
        encoded = json.dumps(value, ensure_ascii=ascii_only).encode()
        expected.append(encoded)
        stream += pad + encoded + pad + ending + b"".join(blank + b"\n" for blank in blanks)
    if not terminated and records:
        stream = stream.rstrip(b" \t\r\n")
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=16))))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
    assert split_all(*chunks) == split_all(stream) == expected
    assert [json.loads(line) for line in split_all(*chunks)] == [value for value, *_ in records]
