"""The stream layer: incremental SSE and NDJSON decoders, the tool-call assembler, the
normalizer that turns an adapter's raw response into canonical events, and iterators."""

from .iterators import BaseStreamIterator, HttpStreamIterator, MockStreamIterator, replay_body, replay_stream
from .normalizer import StreamNormalizer

__all__ = [
    "BaseStreamIterator",
    "HttpStreamIterator",
    "MockStreamIterator",
    "StreamNormalizer",
    "replay_body",
    "replay_stream",
]
