"""Waiting in tests: for a condition, with a deadline, never for a fixed time.

A test that sleeps a fixed time and then asserts passes on an idle machine and fails on a
busy one; a loop without a deadline hangs the run. Both forms here poll `predicate` until
it returns something truthy (and return that), and fail with `message` when `timeout`
seconds pass first. The deadlines are generous on purpose: they only matter when the
thing waited for never happens, and a loaded CI machine can be many times slower than a
laptop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0


def _failure(message: str | Callable[[], str], timeout: float) -> AssertionError:
    text = message() if callable(message) else message
    return AssertionError(f"timed out after {timeout:g}s waiting for {text}")


def wait_until(
    predicate: Callable[[], T],
    timeout: float = DEFAULT_TIMEOUT,
    message: str | Callable[[], str] = "the condition",
    interval: float = 0.02,
) -> T:
    """Poll `predicate` (blocking) until it is truthy; `message` may be a callable, called
    only on failure, to describe the state the test was left in."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(message, timeout)
        time.sleep(interval)


async def async_wait_until(
    predicate: Callable[[], T],
    timeout: float = DEFAULT_TIMEOUT,
    message: str | Callable[[], str] = "the condition",
    interval: float = 0.01,
) -> T:
    """Poll `predicate` from a coroutine, letting the event loop run in between."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise _failure(message, timeout)
        await asyncio.sleep(interval)
