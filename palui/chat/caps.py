"""Global caps that pause turns: a daily token cap and a number of runs per hour.

Both are counted in the database, so they hold across restarts and processes. A paused chat
keeps its messages (they stay in the inbox) and they are answered once the cap lifts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from palui.db import Store, day_start, hour_ago


@dataclass(frozen=True, slots=True)
class CapHit:
    cap: str  # "daily_token_cap" | "runs_per_hour"
    message: str
    lifts_at: datetime


def _in(delta: timedelta) -> str:
    minutes = max(int(delta.total_seconds() // 60), 1)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


async def check_caps(
    store: Store, now: datetime, *, daily_token_cap: int, runs_per_hour: int
) -> CapHit | None:
    """The cap that stops a turn from starting now, if any (0 = that cap is off)."""
    if daily_token_cap:
        used = await store.turns.tokens_since(day_start(now))
        if used >= daily_token_cap:
            lifts = day_start(now) + timedelta(days=1)
            return CapHit(
                "daily_token_cap",
                f"Paused: today's token cap ({daily_token_cap:,}) is used up. It resets at "
                f"00:00 UTC (in {_in(lifts - now)}). Your messages are kept and answered then.",
                lifts,
            )
    if runs_per_hour:
        since = hour_ago(now)
        runs = await store.turns.runs_since(since)
        if runs >= runs_per_hour:
            oldest = await store.turns.oldest_run_since(since) or now
            lifts = oldest + timedelta(hours=1)
            return CapHit(
                "runs_per_hour",
                f"Paused: {runs} runs in the last hour (the limit is {runs_per_hour}). Next run "
                f"possible at {lifts:%H:%M} UTC. Your messages are kept and answered then.",
                lifts,
            )
    return None
