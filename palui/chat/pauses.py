"""A cap hit, told once: the chat hears "Paused: …" the first time a cap stops its turns, not at
every message that waits; the worker then sleeps until the cap lifts (`palui.chat.workers`).

`palui.chat.caps` is the pure check; this adds what the chat was already told.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from palui.chat.caps import CapCounts, Caps, cap_hit
from palui.db import Store
from palui.delivery.outbox import Outbox
from palui.domain.windows import day_start, hour_ago
from palui.logs import get_logger
from palui.observe import Metrics

log = get_logger("palui.chat.pauses")


class CapPauses:
    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        *,
        daily_token_cap: int,
        runs_per_hour: int,
        now: Callable[[], datetime],
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics or Metrics()
        self._store = store
        self._outbox = outbox
        self._caps = Caps(daily_token_cap, runs_per_hour)
        self._now = now
        self._told: dict[int, datetime] = {}  # chat -> when the cap it was told about lifts

    async def paused_until(self, chat_id: int) -> datetime | None:
        """When the cap that stops the chat's turns now lifts; None when no cap is hit."""
        now = self._now()
        hit = cap_hit(self._caps, await self._counts(now), now)
        if hit is None:
            self._told.pop(chat_id, None)
            return None
        if self._told.get(chat_id) != hit.lifts_at:
            log.info("turns_paused", chat_id=chat_id, cap=hit.cap, until=hit.lifts_at.isoformat())
            self._told[chat_id] = hit.lifts_at
            self._metrics.cap_hit(hit.cap)
            await self._outbox.add(chat_id, hit.message)
        return hit.lifts_at

    async def _counts(self, now: datetime) -> CapCounts:
        caps, turns, since = self._caps, self._store.turns, hour_ago(now)
        tokens = await turns.tokens_since(day_start(now)) if caps.daily_token_cap else 0
        runs = await turns.runs_since(since) if caps.runs_per_hour else 0
        oldest = await turns.oldest_run_since(since) if runs >= caps.runs_per_hour > 0 else None
        return CapCounts(tokens, runs, oldest)
