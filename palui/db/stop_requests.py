"""Stop requests: a /stop for a turn that another process runs (DESIGN §1.1, several processes).

A request names the turn, not the chat, so one that comes too late (the turn has ended) can never
stop a later turn; it is only recorded while the turn is running under another live holder's
lease, and old rows are purged when the next request is made.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, literal, select

from palui.db.models import ChatLease, OutboxMessage, StopRequest, Turn, UTCDateTime, utcnow
from palui.db.repo import Repo
from palui.domain import TurnStatus


class StopRequestRepo(Repo):
    async def request(self, chat_id: int, holder: str, keep: timedelta, reply: str) -> list[str]:
        """Ask the chat's running turn to stop when a live process other than `holder` runs it
        (holds the chat's lease). Returns the turns asked; none when nothing runs elsewhere.

        `reply` goes into the outbox with the request, so it precedes whatever the turn's process
        says once it has stopped."""
        now = utcnow()
        running = (
            select(Turn.id, Turn.chat_id, literal(now, UTCDateTime()))
            .join(ChatLease, ChatLease.chat_id == Turn.chat_id)
            .where(
                Turn.chat_id == chat_id,
                Turn.status == TurnStatus.RUNNING,
                ChatLease.holder != holder,
                ChatLease.expires_at > now,
            )
        )
        stmt = self._insert(StopRequest).from_select(
            ["turn_id", "chat_id", "requested_at"], running
        )
        stmt = stmt.on_conflict_do_update(  # a second /stop: asked again, not an error
            index_elements=["turn_id"], set_={"requested_at": stmt.excluded.requested_at}
        )
        async with self._db.session() as s, s.begin():
            await s.execute(delete(StopRequest).where(StopRequest.requested_at < now - keep))
            asked = list(await s.scalars(stmt.returning(StopRequest.turn_id)))
            if asked:
                s.add(OutboxMessage(chat_id=chat_id, text=reply))
            return asked

    async def requested(self, turn_id: str) -> bool:
        """Whether the turn was asked to stop (a primary-key lookup: cheap to poll)."""
        async with self._db.session() as s:
            found = await s.scalar(
                select(StopRequest.turn_id).where(StopRequest.turn_id == turn_id)
            )
            return found is not None

    async def forget(self, turn_id: str) -> None:
        async with self._db.session() as s, s.begin():
            await s.execute(delete(StopRequest).where(StopRequest.turn_id == turn_id))
