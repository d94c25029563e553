"""`/status`: the model, today's usage against the caps, the connectors, jobs and database."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from palui.db import Store
from palui.domain import RECALL_ID, ConnectorState, ConnectorStatus
from palui.domain.windows import day_start, hour_ago
from palui.interact.paused import PausedConnectors
from palui.memory import Memory
from palui.tools.switchboard import Switchboard
from palui.turns.offer import Offers


@dataclass(frozen=True, slots=True)
class StatusInfo:
    """What /status reports besides the live numbers."""

    model: str
    fallbacks: tuple[str, ...] = ()
    database_kind: str = "SQLite"
    daily_token_cap: int = 0
    runs_per_hour: int = 0
    models: tuple[str, ...] = ()  # what /model offers (PALUI_MODELS)


def _format_int(value: int) -> str:
    return f"{value:,}"


class Status:
    def __init__(
        self,
        store: Store,
        offers: Offers,
        paused: PausedConnectors,
        memory: Memory,
        info: StatusInfo,
        *,
        now: Callable[[], datetime],
        board: Switchboard | None = None,
    ) -> None:
        self._offers = offers  # the tools: how many are enabled, how many a turn is offered
        self._board = board  # a pause set in another process shows here too
        self._store = store
        self._registry = offers.registry
        self._paused = paused
        self._memory = memory
        self._info = info
        self._now = now

    async def text(self, chat_id: int | None = None) -> str:
        """`chat_id`: the chat asking, whose chosen model (/model) is shown."""
        if self._board is not None:
            await self._board.sync()
        now = self._now()
        tokens = await self._store.turns.tokens_since(day_start(now))
        runs = await self._store.turns.runs_since(hour_ago(now))
        info = self._info
        model = info.model
        if info.fallbacks:
            model += f" (fallback: {', '.join(info.fallbacks)})"
        tokens_line = f"Tokens today: {_format_int(tokens)}"
        tokens_line += (
            f" / {_format_int(info.daily_token_cap)}" if info.daily_token_cap else (" (no cap)")
        )
        run_cap = info.runs_per_hour
        runs_line = f"runs this hour: {runs}" + (f" / {run_cap}" if run_cap else " (no cap)")
        lines = [f"Palui · model {model}", f"{tokens_line} · {runs_line}"]
        if chat_id is not None and len(info.models) > 1:
            chosen = await self._store.choices.model(chat_id)
            chosen = chosen if chosen in info.models else info.model
            lines.insert(1, f"This chat's model: {chosen} (/model to change)")
        stood_in = await self._store.stand_ins.newest(day_start(now))
        if stood_in is not None:
            s = stood_in.stand_in
            lines.insert(1, f"⚠️ {s.primary} refused ({s.reason}); {s.model} stood in today")
        statuses = [
            dataclasses.replace(status, state=ConnectorState.PAUSED)
            if self._paused.is_paused(status.id)
            else status
            for status in (toolset.status() for toolset in self._registry.toolsets)
        ]
        memory_state = await self._memory.status_text()  # "auto-recall on (skipped 4 of ...)"
        if statuses:
            lines.append("Connectors")
            lines += [f"  {connector_line(status, memory_state)}" for status in statuses]
        lines.append((await self._offers.size()).line())
        jobs = await self._store.jobs.all()
        if jobs:
            active = sum(job.enabled for job in jobs)
            off = f", {len(jobs) - active} off" if active < len(jobs) else ""
            lines.append(f"Jobs: {active} active{off}")
        lines.append(f"Database: {info.database_kind}")
        return "\n".join(lines)


def connector_line(status: ConnectorStatus, memory_state: str | None = None) -> str:
    name = status.id.removeprefix("mcp-")
    if status.state == ConnectorState.CONNECTED and status.id == RECALL_ID and memory_state:
        return f"✅ {name} — {memory_state}"
    if status.state == ConnectorState.CONNECTED:
        return f"✅ {name} — {status.tool_count} tools"
    if status.state == ConnectorState.PAUSED:
        return f"⏸ {name} — paused"
    if status.state == ConnectorState.CONNECTING and status.error:
        # Trying again after a failure: the failure is still what the person needs to see.
        return f'⚠️ {name} — not connected: "{status.error}" (retrying now)'
    if status.state == ConnectorState.CONNECTING:
        return f"⏳ {name} — connecting"
    if status.state == ConnectorState.NEEDS_SIGN_IN:
        return f"🔑 {name} — needs sign-in: send /connect {name} in our private chat"
    retry = f" (retrying in {status.retry_in_s:.0f} s)" if status.retry_in_s is not None else ""
    return f'⚠️ {name} — not connected: "{status.error or "unknown error"}"{retry}'
