"""Whether Telegram answers, as every request finds it: one per bot, shared by the poller and
the sender, so that what one request learns moves the others at once.

A request that fails as an outage fails (a 5xx from the front end, a timeout, a lost
connection) marks the link down; one Telegram answers (even with a refusal) marks it up again.
A 429 moves nothing: Telegram answered, and its `retry_after` is honoured where it came.

- When the link goes down, a long poll in flight is given up at once: an outage's requests hang
  unanswered, and a hung long poll would hold every incoming message until its read timeout
  (its 25 s plus 10). The poller goes on with short polls (`palui.channels.telegram.inbound`).
- When it comes back, a request that was in flight while it was down is given up `GRACE_S`
  after it began, if it has not been answered by then: the front end lost it, and waiting out
  its read timeout would hold its chat's replies (or the poll) for that long. A reply's part
  given up so is looked for before it is sent again (`palui.delivery.shown`), never blindly
  repeated.
- Whatever waits for the link goes on at once: a retry waiting in `back_or`, and the callbacks
  of `on_back` (the outbox sends what the outage held up).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from palui.logs import get_logger

log = get_logger("palui.telegram")

# How long a request begun while the link was down may still take once it is back. Telegram
# answers a send in well under a second; past this, a request sent into the outage is lost.
GRACE_S = 2.0


class Abandoned(Exception):
    """The request was given up (see the module): it may or may not have been carried out."""


@dataclass(eq=False)
class _Flight:
    deadline: asyncio.Timeout
    started: float
    long_poll: bool
    saw_down: bool  # the link was down at some moment while this was in flight


class Link:
    """One bot's view of whether Telegram answers (see the module)."""

    def __init__(self) -> None:
        self.down = False
        self._flights: set[_Flight] = set()
        self._back = asyncio.Event()  # set while the link is up
        self._back.set()
        self._on_back: list[Callable[[], object]] = []

    def on_back(self, callback: Callable[[], object]) -> None:
        """Call `callback` (synchronously, so it must not block) each time the link answers
        again after being down."""
        self._on_back.append(callback)

    @contextlib.asynccontextmanager
    async def flight(self, *, long_poll: bool = False) -> AsyncIterator[None]:
        """Around one request: raises `Abandoned` when the link gives it up (see the module)."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(None) as deadline:
                flight = _Flight(deadline, loop.time(), long_poll, saw_down=self.down)
                self._flights.add(flight)
                try:
                    yield
                finally:
                    self._flights.discard(flight)
        except TimeoutError as exc:
            if deadline.expired():  # ours, not a timeout from inside the request
                raise Abandoned("given up: Telegram did not answer it") from exc
            raise

    def failed(self) -> None:
        """A request failed as an outage fails."""
        if not self.down:
            self.down = True
            self._back.clear()
            log.warning("telegram_unreachable")
        now = asyncio.get_running_loop().time()
        for flight in self._flights:
            flight.saw_down = True
            if flight.long_poll:
                _give_up_at(flight, now)

    def answered(self) -> None:
        """Telegram answered a request."""
        if not self.down:
            return
        self.down = False
        log.info("telegram_back")
        now = asyncio.get_running_loop().time()
        for flight in self._flights:
            if flight.saw_down:
                _give_up_at(flight, max(now, flight.started + GRACE_S))
        self._back.set()
        for callback in self._on_back:
            callback()

    async def back_or(self, seconds: float) -> None:
        """Wait `seconds`; while the link is down, only until it answers again."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                if self.down:
                    await self._back.wait()
                else:
                    await asyncio.sleep(seconds)


def _give_up_at(flight: _Flight, when: float) -> None:
    current = flight.deadline.when()
    if not flight.deadline.expired() and (current is None or when < current):
        flight.deadline.reschedule(when)
