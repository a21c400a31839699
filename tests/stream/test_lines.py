"""The line splitter both stream decoders share (stream/lines.py)."""

import pytest

from codecompanion_py.errors import ResponseTooLarge
from codecompanion_py.stream.lines import LineSplitter, size_text


def test_lines_cut_anywhere_come_out_whole():
    splitter = LineSplitter()
    assert splitter.split(b"ab") == []
    assert splitter.split(b"c\nde") == [b"abc"]
    assert splitter.split(b"\n\nf") == [b"de", b""]
    assert splitter.take() == b"f"
    assert splitter.take() == b""


def test_a_line_past_the_limit_is_refused_however_it_arrives():
    for chunks in ([b"x" * 11], [b"x" * 6, b"x" * 5], [b"x" * 6, b"x" * 5 + b"\n"], [b"ok\n" + b"x" * 11]):
        splitter = LineSplitter(10)
        with pytest.raises(ResponseTooLarge, match="a line in the response is longer than 10 bytes"):
            for chunk in chunks:
                splitter.split(chunk)
    assert LineSplitter(10).split(b"x" * 10 + b"\n") == [b"x" * 10]


def test_sizes_read_as_configured():
    assert [size_text(n) for n in (16 << 20, 512 << 10, 100, 3 << 30)] == ["16 MiB", "512 KiB", "100 bytes", "3 GiB"]
