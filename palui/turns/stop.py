"""/stop: cancelling a chat's running turn, here or in another process.

Locally, `RunningTurns` knows each chat's running turn and cancels its task; the turn's drive
then records it as stopped. When the chat's turn runs in another process (several processes on
one database), a process that receives /stop but runs no turn for the chat records a stop
request for the turn the database shows running under another live process's lease
(`palui.db.stop_requests`). Each process watches its own running turns: a small task per turn
looks up the turn's request every `POLL_S` seconds (a primary-key lookup) and, when there is
one, cancels the turn exactly as a local /stop does; the turn's process then tells the person
what was stopped.

SQLite runs one process only, so there nothing is recorded and no turn is watched: a turn costs
no database work for this.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from palui.db.stop_requests import StopRequestRepo
from palui.logs import get_logger
from palui.tools.runner import CallRunner

log = get_logger("palui.turns.stop")

POLL_S = 0.5  # how soon a turn elsewhere notices a /stop
KEEP = timedelta(hours=1)  # a request no turn took (it ended meanwhile) is purged after this
STOPPING_TEXT = "Stopping…"


def stopped_text(interrupted: Sequence[str]) -> str:
    """What the person is told once a turn is stopped, naming the calls cut short."""
    notes = [f"{name} was interrupted; it may or may not have completed." for name in interrupted]
    return "\n".join(["Stopped.", *notes])


@dataclass(slots=True)
class RunningTurn:
    turn_id: str
    task: asyncio.Task[Any]
    tools: CallRunner
    stop_requested: bool = False
    # Stopped by a /stop another process received: this process tells the person.
    stopped_text: str | None = None
    # Cancelled because another process took the chat's lease over: it ends saying nothing.
    lease_lost: bool = False

    def cancel(self) -> list[str]:
        """Cancel the turn; the names of the tool calls it interrupted."""
        interrupted = self.tools.in_flight()
        self.stop_requested = True
        self.task.cancel()
        return interrupted

    def stop_requested_elsewhere(self) -> None:
        if not self.task.done() and not self.stop_requested:
            self.stopped_text = stopped_text(self.cancel())


class RunningTurns:
    """The turn each chat runs in this process right now."""

    def __init__(self) -> None:
        self.by_chat: dict[int, RunningTurn] = {}

    def stop(self, chat_id: int) -> list[str] | None:
        """Cancel the chat's running turn; the names of the tool calls it interrupted."""
        running = self.by_chat.get(chat_id)
        if running is None or running.task.done():
            return None
        return running.cancel()

    def lose(self, chat_id: int) -> None:
        """The chat's lease was taken over: cancel its running turn before its next side
        effect; its drive then ends it without writing or sending anything."""
        running = self.by_chat.get(chat_id)
        if running is not None and not running.task.done():
            running.lease_lost = True
            running.task.cancel()


class StopRequests:
    def __init__(self, repo: StopRequestRepo, *, enabled: bool, poll_s: float = POLL_S) -> None:
        self._repo = repo
        self._enabled = enabled
        self._poll_s = poll_s

    async def request(self, chat_id: int, holder: str) -> bool:
        """Ask another process to stop the chat's running turn; False when none runs elsewhere
        (`holder` is this process's lease holder name). When asked, `STOPPING_TEXT` is in the
        chat's outbox (the turn's process says "Stopped." after it)."""
        if not self._enabled:
            return False
        turns = await self._repo.request(chat_id, holder, KEEP, STOPPING_TEXT)
        if turns:
            log.info("stop_requested_elsewhere", chat_id=chat_id, turns=turns)
        return bool(turns)

    def watch(self, turn_id: str, stop: Callable[[], Any]) -> asyncio.Task[None] | None:
        """Watch a turn running here for a request; `stop` cancels it. Cancel the task when the
        turn's drive ends."""
        if not self._enabled:
            return None
        return asyncio.create_task(self._watch(turn_id, stop), name=f"stop-watch-{turn_id}")

    async def forget(self, turn_id: str) -> None:
        """Drop a request a turn's earlier drive did not take (before the turn resumes)."""
        if self._enabled:
            await self._repo.forget(turn_id)

    async def _watch(self, turn_id: str, stop: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(self._poll_s)
            try:
                asked = await self._repo.requested(turn_id)
            except Exception as exc:  # a database hiccup: look again next time
                log.warning("stop_request_poll_failed", turn_id=turn_id, error=str(exc))
                continue
            if asked:
                log.info("stop_request_taken", turn_id=turn_id)
                with contextlib.suppress(Exception):  # else purged later; it names this turn only
                    await self._repo.forget(turn_id)
                stop()
                return
