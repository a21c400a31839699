"""The benchmark's provider: the same scripted stream, in one wire format, to every POST.

    python -m codecompanion_py.demo.bench_server --bench-chunks N [--port P] [--format F]
        [--line-every K] [--pace CPS]

serves an N-chunk stream (OpenAI chat-completions by default) and prints `READY <url>`.
"""

from __future__ import annotations

import argparse
import time

import msgspec

from .connection import LAST_CHUNK, Reply, chunk_frame
from .server import ScriptedServer, error_reply, serve_forever


def openai_stream_frames(n: int, *, model: str = "demo", line_every: int = 0) -> list[bytes]:
    """The SSE frames of an OpenAI chat-completions stream with `n` content chunks: a role
    chunk, `n` chunks "tok<i> ", a finish chunk, a usage chunk and `data: [DONE]`.

    With `line_every` > 0 every `line_every`-th token ends its line instead of a space,
    and every fifth such line a paragraph, as prose does; 0 keeps the whole reply on one
    line (a worst case for Neovim's wrapped-line layout and its markdown highlighters)."""
    base = {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def frame(delta: dict, finish: str | None = None) -> bytes:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + msgspec.json.encode(chunk) + b"\n\n"

    prompt_tokens = 10
    frames = [frame({"role": "assistant", "content": ""})]
    frames += [frame({"content": token}) for token in bench_tokens(n, line_every)]
    frames.append(frame({}, "stop"))
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
    frames.append(b"data: " + msgspec.json.encode({**base, "choices": [], "usage": usage}) + b"\n\n")
    frames.append(b"data: [DONE]\n\n")
    return frames


def _chunked_body(frames: list[bytes]) -> bytes:
    """`frames` framed once, ahead of time, as a whole chunked body: one HTTP chunk each."""
    return b"".join(chunk_frame(f, True) for f in frames if f) + LAST_CHUNK


def bench_tokens(n: int, line_every: int = 0) -> list[str]:
    """`n` tokens "tok<i>" and their separators; see `openai_stream_frames`."""

    def ending(i: int) -> str:
        if line_every <= 0 or i % line_every != line_every - 1:
            return " "
        return "\n\n" if i % (5 * line_every) == 5 * line_every - 1 else "\n"

    return [f"tok{i}{ending(i)}" for i in range(n)]


def anthropic_stream_frames(n: int, *, model: str = "demo", line_every: int = 0) -> list[bytes]:
    """The same content as an Anthropic Messages stream (`event:` and `data:` lines)."""

    def frame(payload: dict) -> bytes:
        return b"event: " + payload["type"].encode() + b"\ndata: " + msgspec.json.encode(payload) + b"\n\n"

    start = {
        "type": "message_start",
        "message": {
            "id": "msg_demo",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    frames = [
        frame(start),
        frame({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    frames += [
        frame({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token}})
        for token in bench_tokens(n, line_every)
    ]
    frames += [
        frame({"type": "content_block_stop", "index": 0}),
        frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n},
            }
        ),
        frame({"type": "message_stop"}),
    ]
    return frames


def gemini_stream_frames(n: int, *, model: str = "demo", line_every: int = 0) -> list[bytes]:
    """The same content as a Gemini `streamGenerateContent?alt=sse` stream (CRLF framing)."""

    def frame(payload: dict) -> bytes:
        return b"data: " + msgspec.json.encode(payload) + b"\r\n\r\n"

    tokens = bench_tokens(n, line_every)
    frames = [
        frame(
            {
                "candidates": [{"content": {"parts": [{"text": token}], "role": "model"}, "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": i + 1, "totalTokenCount": 11 + i},
                "modelVersion": model,
            }
        )
        for i, token in enumerate(tokens)
    ]
    frames.append(
        frame(
            {
                "candidates": [
                    {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": n, "totalTokenCount": 10 + n},
            }
        )
    )
    return frames


STREAM_FORMATS = {"openai": openai_stream_frames, "anthropic": anthropic_stream_frames, "gemini": gemini_stream_frames}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the same scripted SSE stream to every POST.")
    parser.add_argument("--format", choices=sorted(STREAM_FORMATS), default="openai", help="wire format")
    parser.add_argument("--bench-chunks", type=int, required=True, metavar="N", help="content chunks per reply")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument(
        "--line-every", type=int, default=0, metavar="K", help="end a line every K tokens (default 0: one long line)"
    )
    parser.add_argument(
        "--pace", type=int, default=0, metavar="CPS", help="send CPS chunks a second (default 0: as fast as read)"
    )
    args = parser.parse_args(argv)
    frames = STREAM_FORMATS[args.format](args.bench_chunks, line_every=args.line_every)
    if args.pace > 0:  # a hundredth of a second's chunks at a time, each write its own HTTP chunk
        step = max(1, round(args.pace / 100))
        pieces = [b"".join(frames[i : i + step]) for i in range(0, len(frames), step)]
        stream = Reply(
            headers={"content-type": "text/event-stream", "cache-control": "no-cache"}, chunks=pieces, delay=0.01
        )
    else:  # pre-encoded once: every POST gets the same bytes, already chunk-framed
        stream = Reply(
            headers={"content-type": "text/event-stream", "cache-control": "no-cache", "transfer-encoding": "chunked"},
            chunks=[_chunked_body(frames)],
        )
    not_post = error_reply(405, "the bench server answers POST requests only")

    serve_forever(
        ScriptedServer(lambda request: stream if request.method == "POST" else not_post),
        args.port,
        announce="READY {url}",
    )


if __name__ == "__main__":
    main()
