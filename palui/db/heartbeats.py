"""Process heartbeats: which lease holders are still running (DESIGN §3, several processes).

Each process upserts its row (named as its leases name it) every second (`palui.chat.heartbeat`).
A holder whose row stopped moving is dead as far as its leases go: `stopped` is the SQL a lease's
take folds in, so its chats and outboxes are taken over in seconds rather than when their leases
lapse. A holder with no row at all is never judged by it (only its leases' lapse counts), and a
process that stops cleanly removes its row after releasing its leases.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, exists, literal, select, union_all

from palui.db.models import ChatLease, DeliveryLease, ProcessHeartbeat
from palui.db.repo import DIALECTS, Repo, insert_for

DEAD_BEFORE = "dead_before"  # a beat older than this is a stopped holder's
RELEASED = ""  # a released lease row's holder (as `palui.db.leases` writes it)

_beats: Any = ProcessHeartbeat.__table__


def stopped(holder: Any, dead_before: Any) -> Any:
    """SQL true while `holder` (a column or parameter) has a heartbeat older than `dead_before`
    (a bind parameter or value)."""
    return exists().where(_beats.c.holder == holder, _beats.c.beat_at < dead_before)


def dead_before_param() -> Any:
    return bindparam(DEAD_BEFORE, type_=_beats.c.beat_at.type)


def _beat(is_sqlite: bool) -> Any:
    holder = bindparam("holder", type_=_beats.c.holder.type)
    at = bindparam("at", type_=_beats.c.beat_at.type)
    stmt = insert_for(is_sqlite)(_beats).values(holder=holder, beat_at=at, started_at=at)
    return stmt.on_conflict_do_update(index_elements=["holder"], set_={"beat_at": at})


def _orphans() -> Any:
    """(chat_id, is_delivery) of every lease held by a holder whose beats stopped."""
    dead_before = dead_before_param()
    held = []
    for table, is_delivery in ((ChatLease, False), (DeliveryLease, True)):
        c = table.__table__.c
        held.append(
            select(c.chat_id, literal(is_delivery).label("is_delivery")).where(
                c.holder != RELEASED, stopped(c.holder, dead_before)
            )
        )
    return union_all(*held)


_BEATS = {is_sqlite: _beat(is_sqlite) for is_sqlite in DIALECTS}
_ORPHANS = _orphans()
_FORGET = delete(_beats).where(_beats.c.holder == bindparam("holder"))
_PRUNE = delete(_beats).where(_beats.c.beat_at < bindparam("before", type_=_beats.c.beat_at.type))


class HeartbeatRepo(Repo):
    async def beat(self, holder: str, at: datetime) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(_BEATS[self._db.is_sqlite], {"holder": holder, "at": at})

    async def orphans(self, dead_before: datetime) -> list[tuple[int, bool]]:
        """(chat_id, is_delivery) of the chat and delivery leases held by stopped holders."""
        async with self._db.session() as s:
            rows = await s.execute(_ORPHANS, {DEAD_BEFORE: dead_before})
            return [(int(chat_id), bool(is_delivery)) for chat_id, is_delivery in rows]

    async def forget(self, holder: str) -> None:
        """A process stopping cleanly: its row goes (its leases were released first)."""
        async with self._db.session() as s, s.begin():
            await s.execute(_FORGET, {"holder": holder})

    async def prune(self, before: datetime) -> None:
        """Rows of processes long gone (their leases lapsed long since)."""
        async with self._db.session() as s, s.begin():
            await s.execute(_PRUNE, {"before": before})
