"""Loops that run every little while, for what no event wakes: replies a channel refused for a
moment, approval cards that expired (their turns then resume, told that nothing ran), and the
daily retention prune (palui.db.retention)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

from palui.approvals.decisions import Approvals
from palui.db import Store
from palui.db.retention import RetentionDays
from palui.delivery.outbox import Outbox
from palui.logs import get_logger

log = get_logger("palui.chat.sweepers")

OUTBOX_RETRY_S = 5.0
APPROVAL_SWEEP_S = 30.0
# How often a process asks whether today's prune is due: it runs a minute after the start when
# the last one is over a day old, then once a day, by whichever process moves the shared mark
# first.
PRUNE_CHECK_S = 3600.0
PRUNE_DELAY_S = 60.0


async def sweep_outbox(store: Store, outbox: Outbox) -> None:
    while True:
        await asyncio.sleep(OUTBOX_RETRY_S)
        try:
            for chat_id in {o.chat_id for o in await store.outbox.pending()}:
                if not outbox.busy(chat_id):
                    await outbox.deliver(chat_id)
        except Exception:
            log.exception("outbox_sweep_failed")


async def sweep_approvals(approvals: Approvals, kick: Callable[[int], None]) -> None:
    """Expire overdue cards; their turns resume, told nothing ran."""
    while True:
        try:
            for chat_id in await approvals.expire_due():
                kick(chat_id)
        except Exception:
            log.exception("approval_sweep_failed")
        await asyncio.sleep(APPROVAL_SWEEP_S)


async def prune_if_due(store: Store, days: RetentionDays, now: datetime) -> dict[str, int] | None:
    """Run the prune if no process has run it in the last day; what it deleted, or None."""
    if not await store.retention.claim_daily(now):
        return None
    deleted = await store.retention.prune(days, now)
    log.info("retention_pruned", **deleted)
    return deleted


async def sweep_retention(store: Store, days: RetentionDays, now: Callable[[], datetime]) -> None:
    # Not at the start itself: a day's deletions hold the database's write lock, and the first
    # messages after a start (often the ones that waited for it) should not queue behind them.
    await asyncio.sleep(PRUNE_DELAY_S)
    while True:
        try:
            await prune_if_due(store, days, now())
        except Exception:
            log.exception("retention_sweep_failed")
        await asyncio.sleep(PRUNE_CHECK_S)
