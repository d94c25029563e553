"""Loops that run every little while, for what no event wakes: replies a channel refused for a
moment, and approval cards that expired (their turns then resume, told that nothing ran)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from palui.approvals.decisions import Approvals
from palui.chat.outbox import Outbox
from palui.db import Store
from palui.logs import get_logger

log = get_logger("palui.chat.sweepers")

OUTBOX_RETRY_S = 5.0
APPROVAL_SWEEP_S = 30.0


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
