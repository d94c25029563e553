"""Chat leases: one process at a time runs a chat's turns (DESIGN §3, several processes).

A lease row names its holder, when it lapses, and its generation. Taking it is one upsert that
succeeds only when the row is free, lapsed, or already ours, so two processes can never both
hold it; a holder that dies stops renewing and the lease lapses on its own.

Fencing: each take counts the row's generation up (a renewal keeps it), and the holder's work
carries the `Fence` it took. A write that matters is made conditional on that generation still
being the row's (`held_by`, folded into the write's own statement, or `check` in its
transaction), so a holder that stalled past its lapse while another process took over finds its
late writes refused (`LeaseLost`) instead of overwriting what the new holder recovered. Rows are
never deleted (a release clears the holder), so the generation only ever goes up.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, exists, func, insert, literal, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

from palui.db.models import ChatLease, DeliveryLease, utcnow
from palui.db.repo import Repo
from palui.domain import Fence
from palui.errors import LeaseLost

Table = type[ChatLease] | type[DeliveryLease]
RELEASED = ""  # the holder of a released row: anyone may take it


def held_by(fence: Fence, table: Table = ChatLease) -> Any:
    """SQL true while `fence` is still the lease's current take (for a write's WHERE)."""
    return exists().where(
        table.chat_id == fence.chat_id,
        table.holder == fence.holder,
        table.generation == fence.generation,
    )


# The fence as bind parameters, for statements built once and run with `fence_params`: a
# statement built per call costs ~0.7 ms of CPU in SQLAlchemy (building, its cache key, the
# ORM's bulk path), several times what SQLite takes to run it.
FENCE_CHAT, FENCE_HOLDER, FENCE_GENERATION = "fence_chat_id", "fence_holder", "fence_generation"


def held_by_params(table: Table = ChatLease) -> Any:
    """`held_by` with the fence left as bind parameters (`fence_params` fills them)."""
    t = table.__table__.c
    return exists().where(
        t.chat_id == bindparam(FENCE_CHAT, type_=t.chat_id.type),
        t.holder == bindparam(FENCE_HOLDER, type_=t.holder.type),
        t.generation == bindparam(FENCE_GENERATION, type_=t.generation.type),
    )


def fence_params(fence: Fence) -> dict[str, Any]:
    """The parameters `held_by_params` and `fenced_insert_params` statements take."""
    return {
        FENCE_CHAT: fence.chat_id,
        FENCE_HOLDER: fence.holder,
        FENCE_GENERATION: fence.generation,
    }


def fenced_insert_params(table: Any, columns: Sequence[str]) -> Insert:
    """`fenced_insert` built once: each column's value is the bind parameter of its name, the
    fence's are `fence_params`'. Run with `{**row, **fence_params(fence)}`."""
    cols = table.__table__.columns
    row = select(*(bindparam(k, type_=cols[k].type).label(k) for k in columns))
    return insert(table.__table__).from_select(list(columns), row.where(held_by_params()))


def fenced_insert(table: Any, values: dict[str, Any], fence: Fence) -> Insert:
    """An INSERT of one row that adds nothing unless `fence` is still the chat lease's
    current take: the condition rides in the statement (`INSERT … SELECT … WHERE`)."""
    columns = table.__table__.columns
    row = select(*(literal(v, columns[k].type).label(k) for k, v in values.items()))
    return insert(table).from_select(list(values), row.where(held_by(fence)))


async def check(s: AsyncSession, fence: Fence | None, table: Table = ChatLease) -> None:
    """Inside a write transaction: raise `LeaseLost` unless `fence` is still current. On
    PostgreSQL the row is locked for share, so a take-over waits until this transaction ends."""
    if fence is None:
        return
    query = select(table.generation).where(
        table.chat_id == fence.chat_id,
        table.holder == fence.holder,
        table.generation == fence.generation,
    )
    if await s.scalar(query.with_for_update(read=True)) is None:
        raise LeaseLost(fence.chat_id, "delivery" if table is DeliveryLease else "chat")


def _other_held(table: Table, chat_id: int, holder: str, now: Any) -> Any:
    """SQL true while another process holds the chat's other lease, which excludes this one.

    A chat's worker sends its own replies under its chat lease (`palui.chat.outbox`), so no
    other process may send that chat's outbox meanwhile: the delivery lease can't be taken
    while another holder has the chat lease, lapsed or not (a holder that stalled may still
    renew it; a new holder's take ends that). Nor can the chat lease be taken while another
    process is sending under a live delivery lease."""
    if table is ChatLease:
        other: Table = DeliveryLease
        held = other.expires_at >= now
    else:
        other = ChatLease
        held = true()
    return exists().where(
        other.chat_id == chat_id, other.holder != RELEASED, other.holder != holder, held
    )


class LeaseRepo(Repo):
    table: Table = ChatLease

    async def take(self, chat_id: int, holder: str, ttl_s: float) -> Fence | None:
        """Take the chat's lease for `ttl_s` seconds under a new generation; None when another
        holds it, or holds the chat's other lease (see `_other_held`)."""
        now = utcnow()
        t = self.table
        row = select(
            literal(chat_id, t.chat_id.type).label("chat_id"),
            literal(holder, t.holder.type).label("holder"),
            literal(now + timedelta(seconds=ttl_s), t.expires_at.type).label("expires_at"),
            literal(1, t.generation.type).label("generation"),
        ).where(~_other_held(t, chat_id, holder, now))
        stmt = self._insert(t).from_select(["chat_id", "holder", "expires_at", "generation"], row)
        stmt = stmt.on_conflict_do_update(
            index_elements=["chat_id"],
            set_={
                "holder": stmt.excluded.holder,
                "expires_at": stmt.excluded.expires_at,
                "generation": t.generation + 1,
            },
            where=(t.holder == holder) | (t.holder == RELEASED) | (t.expires_at < now),
        )
        async with self._db.session() as s, s.begin():
            if not self._db.is_sqlite:
                # Both leases' takes of a chat, one at a time: each reads the other's row, and
                # two at once could each miss the other (SQLite serialises writers anyway).
                key = func.hashtextextended(f"palui-lease:{chat_id}", 0)
                await s.execute(select(func.pg_advisory_xact_lock(key)))
            # RETURNING, not rowcount: asyncpg reports no reliable rowcount for an upsert.
            taken = (await s.execute(stmt.returning(t.generation))).scalar_one_or_none()
        return None if taken is None else Fence(chat_id, holder, int(taken))

    async def acquire(self, chat_id: int, holder: str, ttl_s: float) -> Fence | None:
        """`take` (its older name)."""
        return await self.take(chat_id, holder, ttl_s)

    async def renew(self, fence: Fence, ttl_s: float) -> bool:
        """Extend the lease taken as `fence`, lapsed or not; False when it was taken over."""
        t = self.table
        stmt = (
            update(t)
            .where(t.chat_id == fence.chat_id, t.holder == fence.holder)
            .where(t.generation == fence.generation)
            .values(expires_at=utcnow() + timedelta(seconds=ttl_s))
            .returning(t.chat_id)
        )
        async with self._db.session() as s, s.begin():
            return (await s.execute(stmt)).scalar_one_or_none() is not None

    async def release(self, chat_id: int, holder: str, generation: int | None = None) -> None:
        """Give the lease up (only if `holder` still has it); the row and its generation stay."""
        t = self.table
        stmt = update(t).where(t.chat_id == chat_id, t.holder == holder)
        if generation is not None:
            stmt = stmt.where(t.generation == generation)
        async with self._db.session() as s, s.begin():
            await s.execute(stmt.values(holder=RELEASED, expires_at=utcnow()))

    async def holders(self) -> list[tuple[int, str]]:
        """(chat_id, holder) of every lease row not released, lapsed or not."""
        t = self.table
        async with self._db.session() as s:
            rows = await s.execute(select(t.chat_id, t.holder).where(t.holder != RELEASED))
            return [(chat_id, holder) for chat_id, holder in rows]
