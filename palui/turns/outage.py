"""The model provider down: chats wait for it instead of being answered with an error (DESIGN
§1.13, Operations), like a cap pause.

A turn whose model could not be reached (every model tried: down, timing out, 5xx) before any
call that changes the world went out ends without using up what it was for: a chat turn's
messages stay in the inbox, a job's run goes back to queued (its unique row kept, started once
more), a webhook's delivery stays unhandled (`palui.turns.ending`; in the database, so a restart
runs them once too). The chat is told once per outage, whichever of its turns found the model
down, that the answer comes when it is back (`went_down`), and its worker waits
(`wake_when_back`) instead of starting turns that would fail the same way. One probe per model —
this process's, whatever the number of chats — asks the model again with a growing pause
(`BACK_OFF_S`); when it answers, every waiting chat's worker is woken and runs what was kept,
once. A turn that had already changed something is ended as
before, saying what ran: running it again could repeat that call.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence

from palui.errors import ModelError
from palui.logs import get_logger
from palui.ports import ChatModel

log = get_logger("palui.turns.outage")

# Then every 5 s: a ping costs one token, and a chat waits at most this long after the model is
# back.
BACK_OFF_S = (1.0, 2.0, 3.0, 5.0)
TOLD = "The model isn't answering right now; I'll answer your message when it's back."

Wake = Callable[[int], None]


class ModelOutage:
    def __init__(self, model: ChatModel, *, back_off_s: Sequence[float] = BACK_OFF_S) -> None:
        self._model = model
        self._back_off_s = tuple(back_off_s)
        self._probe: asyncio.Task[None] | None = None
        self._told: set[int] = set()  # chats told during this outage
        self._waiting: dict[int, Wake] = {}  # chats to wake when the model answers

    @property
    def down(self) -> bool:
        """Whether the model is known not to answer (its probe is still asking)."""
        return self._probe is not None and not self._probe.done()

    def went_down(self, chat_id: int) -> bool:
        """A chat's turn found the model unreachable: the probe starts unless it runs. True the
        first time in this outage the chat hears of it (to tell it, once)."""
        if not self.down:
            log.warning("model_down", model=self._model.name)
            self._told.clear()
            # A context of its own: the probe is no chat's, its lines carry no turn's ids.
            self._probe = asyncio.create_task(
                self._until_back(), name="model-probe", context=contextvars.Context()
            )
        return self.first_word(chat_id)

    def first_word(self, chat_id: int) -> bool:
        """True the first time in this outage the chat is to hear of it (then: told)."""
        first = chat_id not in self._told
        self._told.add(chat_id)
        return first

    def wake_when_back(self, chat_id: int, wake: Wake) -> None:
        """`wake(chat_id)` once the model answers again (at once if it already does)."""
        if not self.down:
            wake(chat_id)
            return
        self._waiting[chat_id] = wake

    def probe(self) -> asyncio.Task[None] | None:
        """The probe while it runs (for shutdown to cancel)."""
        return self._probe if self.down else None

    async def _until_back(self) -> None:
        attempt = 0
        while True:
            await asyncio.sleep(self._back_off_s[min(attempt, len(self._back_off_s) - 1)])
            attempt += 1
            try:
                await self._model.ping()
                break
            except ModelError as exc:
                log.info(
                    "model_still_down", model=self._model.name, attempt=attempt, error=str(exc)
                )
            except Exception as exc:  # a probe that breaks must not end the wait
                log.warning("model_probe_failed", error=repr(exc))
        log.warning("model_back", model=self._model.name, probes=attempt)
        waiting, self._waiting = self._waiting, {}
        for chat_id, wake in waiting.items():
            wake(chat_id)
