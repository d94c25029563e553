"""Global caps that pause turns: a daily token cap and a number of runs per hour.

A pure check over the counts (`CapCounts`, read from the database by `palui.chat.pauses`, so
the caps hold across restarts and processes). A paused chat keeps its messages (they stay in the
inbox) and they are answered once the cap lifts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from palui.domain.windows import day_start


@dataclass(frozen=True, slots=True)
class Caps:
    daily_token_cap: int  # 0 = off
    runs_per_hour: int  # 0 = off


@dataclass(frozen=True, slots=True)
class CapCounts:
    tokens_today: int
    runs_last_hour: int
    oldest_run_last_hour: datetime | None  # when the hour's window frees its first slot


@dataclass(frozen=True, slots=True)
class CapHit:
    cap: str  # "daily_token_cap" | "runs_per_hour"
    message: str
    lifts_at: datetime


def _in(delta: timedelta) -> str:
    minutes = max(int(delta.total_seconds() // 60), 1)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def cap_hit(caps: Caps, counts: CapCounts, now: datetime) -> CapHit | None:
    """The cap that stops a turn from starting now, if any."""
    if caps.daily_token_cap and counts.tokens_today >= caps.daily_token_cap:
        lifts = day_start(now) + timedelta(days=1)
        return CapHit(
            "daily_token_cap",
            f"Paused: today's token cap ({caps.daily_token_cap:,}) is used up. It resets at "
            f"00:00 UTC (in {_in(lifts - now)}). Your messages are kept and answered then.",
            lifts,
        )
    if caps.runs_per_hour and counts.runs_last_hour >= caps.runs_per_hour:
        lifts = (counts.oldest_run_last_hour or now) + timedelta(hours=1)
        return CapHit(
            "runs_per_hour",
            f"Paused: {counts.runs_last_hour} runs in the last hour (the limit is "
            f"{caps.runs_per_hour}). Next run possible at {lifts:%H:%M} UTC. Your messages are "
            "kept and answered then.",
            lifts,
        )
    return None
