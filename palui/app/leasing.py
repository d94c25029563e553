"""Who works on which chat: this process's heartbeat, its chat and delivery leases, and the
recovery of what stopped processes left, built together (they share the process's holder name)."""

from __future__ import annotations

from typing import NamedTuple

from palui.chat.heartbeat import Heartbeat
from palui.chat.leases import ChatLeases, process_holder
from palui.chat.recovery import SWEEP_EVERY_S, Recovery
from palui.db import Store
from palui.domain import ChatScope
from palui.observe import Metrics


class Leasing(NamedTuple):
    leases: ChatLeases  # the chats' leases
    senders: ChatLeases  # the outboxes' delivery leases
    recovery: Recovery


def leasing(store: Store, lease_ttl_s: float, scope: ChatScope, metrics: Metrics) -> Leasing:
    holder = process_holder()
    heartbeat = Heartbeat(store.heartbeats, holder)
    leases = ChatLeases(store.leases, ttl_s=lease_ttl_s, holder=holder, heartbeat=heartbeat)
    # Who sends a chat's outbox: one process at a time, so no reply part goes out twice.
    senders = leases.sibling(store.delivery_leases, "delivery")
    # Orphaned chats are looked for at least twice per lapse.
    sweep_every_s = min(SWEEP_EVERY_S, lease_ttl_s / 2)
    recovery = Recovery(
        store.recovery,
        leases,
        senders,
        scope=scope,
        sweep_every_s=sweep_every_s,
        heartbeat=heartbeat,
        metrics=metrics,
    )
    return Leasing(leases, senders, recovery)
