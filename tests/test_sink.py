"""RenderSink: how a chat's ops are batched for Neovim, on a loop whose clock the test turns."""

from __future__ import annotations

from codecompanion_py.ui import ops
from codecompanion_py.ui.sink import FLOOD_CHARS, FLOOD_INTERVAL, FRAME_INTERVAL, RenderSink


class Handle:
    def __init__(self, loop: ManualLoop, when: float, fn) -> None:
        self.loop, self.when, self.fn, self.cancelled = loop, when, fn, False

    def cancel(self) -> None:
        self.cancelled = True


class ManualLoop:
    """call_soon / call_at / call_later / time, run only when the test says."""

    def __init__(self) -> None:
        self.now = 100.0
        self.handles: list[Handle] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, fn) -> Handle:
        handle = Handle(self, when, fn)
        self.handles.append(handle)
        return handle

    def call_later(self, delay: float, fn) -> Handle:
        return self.call_at(self.now + delay, fn)

    def call_soon(self, fn) -> Handle:
        return self.call_at(self.now, fn)

    def advance(self, seconds: float) -> None:
        """Run, in time order, everything due within `seconds` from now."""
        end = self.now + seconds
        while True:
            due = sorted((h for h in self.handles if not h.cancelled and h.when <= end), key=lambda h: h.when)
            if not due:
                break
            handle = due[0]
            self.handles.remove(handle)
            self.now = max(self.now, handle.when)
            handle.fn()
        self.now = end

    def pending(self) -> list[float]:
        """How long until each scheduled call, to the microsecond."""
        return sorted(round(h.when - self.now, 6) for h in self.handles if not h.cancelled)


def sink() -> tuple[RenderSink, ManualLoop, list[list[ops.Op]]]:
    loop = ManualLoop()
    sent: list[list[ops.Op]] = []
    return RenderSink(sent.append, loop), loop, sent  # type: ignore[arg-type]


def test_tokens_are_drawn_as_one_text_per_frame():
    render, loop, sent = sink()
    for word in ("one ", "two ", "three"):
        render.push(ops.Text(text=word))
    assert sent == [] and loop.pending() == [round(FRAME_INTERVAL, 6)]
    loop.advance(FRAME_INTERVAL)
    assert sent == [[ops.Text(text="one two three")]]


def test_a_flood_is_drawn_ten_times_a_second():
    render, loop, sent = sink()
    render.push(ops.Text(text="x" * 100))
    loop.advance(FRAME_INTERVAL / 2)
    render.push(ops.Text(text="y" * FLOOD_CHARS))  # this frame now holds more than anyone reads
    assert loop.pending() == [round(FLOOD_INTERVAL - FRAME_INTERVAL / 2, 6)]
    loop.advance(FRAME_INTERVAL)
    assert sent == []
    loop.advance(FLOOD_INTERVAL)
    assert sent == [[ops.Text(text="x" * 100 + "y" * FLOOD_CHARS)]]
    render.push(ops.Text(text="z"))  # a new frame: back to the usual pace
    assert loop.pending() == [round(FRAME_INTERVAL, 6)]


def test_other_ops_go_at_the_end_of_the_step_with_the_text_before_them_in_order():
    render, loop, sent = sink()
    render.push(ops.Text(text="the last words"))
    render.push(ops.fire("RequestFinished", {}))
    render.push(ops.Done(status="success"))
    assert sent == []  # nothing until the loop's step is over
    loop.advance(0)
    assert sent == [[ops.Text(text="the last words"), ops.fire("RequestFinished", {}), ops.Done(status="success")]]
    assert loop.pending() == []  # the frame timer went with them
    loop.advance(1)
    assert len(sent) == 1


def test_a_flood_after_an_op_waits_for_its_frame_and_small_text_does_not():
    render, loop, sent = sink()
    render.push(ops.fire("RequestStreaming", {}))
    render.push(ops.Text(text="Hello"))  # a model's first token: drawn with the event, at once
    loop.advance(0)
    assert sent == [[ops.fire("RequestStreaming", {}), ops.Text(text="Hello")]]
    sent.clear()
    render.push(ops.fire("RequestStreaming", {}))
    render.push(ops.Text(text="x" * (FLOOD_CHARS + 1)))  # a replay's first read: kept to the flood's pace
    loop.advance(0)
    assert sent == [[ops.fire("RequestStreaming", {})]]
    loop.advance(FLOOD_INTERVAL)
    assert sent[1:] == [[ops.Text(text="x" * (FLOOD_CHARS + 1))]]
