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

A holder whose process heartbeat stopped (`palui.db.heartbeats`) counts as gone: a take given a
`dead_before` takes its lease over without waiting for the lapse, and its other lease of the
chat no longer keeps this one out. The fence guards that case as any other take-over.

Delivery leases (`DeliveryLeaseRepo`): one process at a time sends a chat's outbox. Replies are
committed to the shared outbox and any process may deliver them (after its own turn, a command,
a tap, its start-up or its retry sweep). Without a lease two processes could send the same reply
part at once; with it the others leave the chat's outbox to the holder, which reads it again
until it is empty. The rows behave exactly like chat leases, in their own table.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import String, bindparam, exists, func, insert, literal, select, true, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Insert

from palui.db.heartbeats import DEAD_BEFORE, dead_before_param, stopped
from palui.db.models import ChatLease, DeliveryLease, utcnow
from palui.db.repo import DIALECTS, Repo, insert_for
from palui.domain import Fence
from palui.errors import LeaseLost

Table = type[ChatLease] | type[DeliveryLease]
RELEASED = ""  # the holder of a released row: anyone may take it
# No heartbeat is older than this: a take given it judges holders by their leases' lapse alone.
NOBODY_DEAD = datetime(1970, 1, 1, tzinfo=UTC)


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


def _fence_match(c: Any) -> tuple[Any, Any, Any]:
    """A lease row's columns `c` equal to the fence's bind parameters: chat, holder, generation."""
    return (
        c.chat_id == bindparam(FENCE_CHAT, type_=c.chat_id.type),
        c.holder == bindparam(FENCE_HOLDER, type_=c.holder.type),
        c.generation == bindparam(FENCE_GENERATION, type_=c.generation.type),
    )


def held_by_params(table: Table = ChatLease) -> Any:
    """`held_by` with the fence left as bind parameters (`fence_params` fills them)."""
    return exists().where(*_fence_match(table.__table__.c))


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


def _other_held(table: Table, chat_id: Any, holder: Any, now: Any, dead_before: Any) -> Any:
    """SQL true while another process holds the chat's other lease, which excludes this one.

    A chat's worker sends its own replies under its chat lease (`palui.delivery.outbox`), so no
    other process may send that chat's outbox meanwhile: the delivery lease can't be taken
    while another holder has the chat lease, lapsed or not (a holder that stalled may still
    renew it; a new holder's take ends that). Nor can the chat lease be taken while another
    process is sending under a live delivery lease. A holder whose heartbeat stopped holds
    nothing. (Values or bind parameters.)"""
    other = (DeliveryLease if table is ChatLease else ChatLease).__table__.c
    held = other.expires_at >= now if table is ChatLease else true()
    return exists().where(
        other.chat_id == chat_id,
        other.holder != RELEASED,
        other.holder != holder,
        held,
        ~stopped(other.holder, dead_before),
    )


# A lease's take, renewal and release, built once per table (and dialect: ON CONFLICT).
TAKE_CHAT, TAKE_HOLDER, TAKE_EXPIRES = "take_chat", "take_holder", "take_expires"
TAKE_NOW = "take_now"
_LOCK_KEY = "lock_key"
_ADVISORY_LOCK = select(
    func.pg_advisory_xact_lock(func.hashtextextended(bindparam(_LOCK_KEY, type_=String), 0))
)


def _take(table: Table, is_sqlite: bool) -> Any:
    """The take's upsert (params: `TAKE_*`)."""
    c = table.__table__.c
    chat_id = bindparam(TAKE_CHAT, type_=c.chat_id.type)
    holder = bindparam(TAKE_HOLDER, type_=c.holder.type)
    now = bindparam(TAKE_NOW, type_=c.expires_at.type)
    dead_before = dead_before_param()
    row = select(
        chat_id.label("chat_id"),
        holder.label("holder"),
        bindparam(TAKE_EXPIRES, type_=c.expires_at.type).label("expires_at"),
        literal(1, c.generation.type).label("generation"),
    ).where(~_other_held(table, chat_id, holder, now, dead_before))
    stmt = insert_for(is_sqlite)(table.__table__).from_select(
        ["chat_id", "holder", "expires_at", "generation"], row
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["chat_id"],
        set_={
            "holder": stmt.excluded.holder,
            "expires_at": stmt.excluded.expires_at,
            "generation": c.generation + 1,
        },
        where=(c.holder == holder)
        | (c.holder == RELEASED)
        | (c.expires_at < now)
        | stopped(c.holder, dead_before),
    )
    # RETURNING, not rowcount: asyncpg reports no reliable rowcount for an upsert.
    return stmt.returning(c.generation)


def _renew(table: Table) -> Any:
    """The renewal (params: `fence_params`, `expires_at`)."""
    t: Any = table.__table__
    return (
        update(t)
        .where(*_fence_match(t.c))
        .values(expires_at=bindparam("expires_at", type_=t.c.expires_at.type))
        .returning(t.c.chat_id)
    )


def _release(table: Table, by_generation: bool) -> Any:
    """The release (params: `fence_params`, the generation only `by_generation`; `expires_at`)."""
    t: Any = table.__table__
    chat, holder, generation = _fence_match(t.c)
    stmt = update(t).where(chat, holder, *([generation] if by_generation else []))
    return stmt.values(
        holder=RELEASED, expires_at=bindparam("expires_at", type_=t.c.expires_at.type)
    )


_TAKES = {
    (table, is_sqlite): _take(table, is_sqlite)
    for table in (ChatLease, DeliveryLease)
    for is_sqlite in DIALECTS
}
_RENEWS = {table: _renew(table) for table in (ChatLease, DeliveryLease)}
_RELEASES = {
    (table, by_generation): _release(table, by_generation)
    for table in (ChatLease, DeliveryLease)
    for by_generation in (False, True)
}


class LeaseRepo(Repo):
    table: Table = ChatLease

    async def take(
        self, chat_id: int, holder: str, ttl_s: float, dead_before: datetime = NOBODY_DEAD
    ) -> Fence | None:
        """Take the chat's lease for `ttl_s` seconds under a new generation; None when another
        holds it, or holds the chat's other lease (see `_other_held`). A holder whose heartbeat
        is older than `dead_before` holds neither."""
        now = utcnow()
        stmt = _TAKES[self.table, self._db.is_sqlite]
        params = {
            TAKE_CHAT: chat_id,
            TAKE_HOLDER: holder,
            TAKE_NOW: now,
            TAKE_EXPIRES: now + timedelta(seconds=ttl_s),
            DEAD_BEFORE: dead_before,
        }
        async with self._db.writing() as c:  # a connection, no session: the hottest writes
            if not self._db.is_sqlite:
                # Both leases' takes of a chat, one at a time: each reads the other's row, and
                # two at once could each miss the other (SQLite serialises writers anyway).
                await c.execute(_ADVISORY_LOCK, {_LOCK_KEY: f"palui-lease:{chat_id}"})
            taken = (await c.execute(stmt, params)).scalar_one_or_none()
        return None if taken is None else Fence(chat_id, holder, int(taken))

    async def acquire(self, chat_id: int, holder: str, ttl_s: float) -> Fence | None:
        """`take` (its older name)."""
        return await self.take(chat_id, holder, ttl_s)

    async def renew(self, fence: Fence, ttl_s: float) -> bool:
        """Extend the lease taken as `fence`, lapsed or not; False when it was taken over."""
        params = fence_params(fence) | {"expires_at": utcnow() + timedelta(seconds=ttl_s)}
        async with self._db.writing() as c:
            found = await c.execute(_RENEWS[self.table], params)
            return found.scalar_one_or_none() is not None

    async def release(self, chat_id: int, holder: str, generation: int | None = None) -> None:
        """Give the lease up (only if `holder` still has it); the row and its generation stay."""
        params = {FENCE_CHAT: chat_id, FENCE_HOLDER: holder, "expires_at": utcnow()}
        if generation is not None:
            params[FENCE_GENERATION] = generation
        stmt = _RELEASES[(self.table, generation is not None)]
        async with self._db.writing() as c:
            await c.execute(stmt, params)

    async def holders(self) -> list[tuple[int, str]]:
        """(chat_id, holder) of every lease row not released, lapsed or not."""
        t = self.table
        async with self._db.session() as s:
            rows = await s.execute(select(t.chat_id, t.holder).where(t.holder != RELEASED))
            return [(chat_id, holder) for chat_id, holder in rows]


class DeliveryLeaseRepo(LeaseRepo):
    table = DeliveryLease
