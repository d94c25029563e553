"""Clocks a person's answer does not count against: a turn's budget and a call's time limit are
`asyncio.Timeout`s registered here (`counted`) for the task and the tasks it starts; a wait for a
person (a server's question in the chat) pauses them all (`paused`) and gives each back the time
it had left."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_COUNTED: ContextVar[tuple[asyncio.Timeout, ...]] = ContextVar("palui_counted", default=())


@contextmanager
def counted(timeout: asyncio.Timeout) -> Iterator[None]:
    token = _COUNTED.set((*_COUNTED.get(), timeout))
    try:
        yield
    finally:
        _COUNTED.reset(token)


@contextmanager
def paused() -> Iterator[None]:
    loop = asyncio.get_running_loop()
    held = []
    for timeout in _COUNTED.get():
        when = timeout.when()
        if timeout.expired():
            continue
        held.append((timeout, None if when is None else max(0.0, when - loop.time())))
        timeout.reschedule(None)
    try:
        yield
    finally:
        for timeout, left in held:
            timeout.reschedule(None if left is None else loop.time() + left)
