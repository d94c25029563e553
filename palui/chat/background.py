"""The chat layer's own tasks: deliveries, sweeps, and the commands and taps being answered.

Kept in one place so closing stops them all (whatever was unfinished stays in the database for
the next start) and `wait_idle` can wait for the handlers of a chat's commands and taps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any

from palui.logs import get_logger

log = get_logger("palui.chat")


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()  # commands and taps being answered
        self.closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any], *, handler: bool = False) -> None:
        task = asyncio.create_task(coro)
        for group in (self._tasks, self._handlers) if handler else (self._tasks,):
            group.add(task)
            task.add_done_callback(group.discard)
        task.add_done_callback(log_failure)

    def handlers(self) -> list[asyncio.Task[Any]]:
        return [task for task in self._handlers if not task.done()]

    async def close(self, others: Iterable[asyncio.Task[Any]] = ()) -> None:
        self.closed = True
        tasks = [*self._tasks, *others]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background_task_failed", error=repr(task.exception()))
