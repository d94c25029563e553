"""A turn's start, in the caller's transaction: the turn's row (reading the chat's open session
in its own INSERT), the person's messages (which claim their updates,
`palui.db.inbox.claimed_by`), and the previews interrupted turns left for the same messages
(`palui.db.turns.TurnRepo.start_chat_turn`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import insert, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.leases import fenced_insert, held_by
from palui.db.models import Chat, MessageRow, Turn, utcnow
from palui.db.sessions import open_session
from palui.domain import Fence, Role, Taint, TurnKind, TurnStatus, UnrecordedPreview
from palui.errors import LeaseLost

TURN_COLUMNS = Turn.__table__.columns
MESSAGES = MessageRow.__table__  # Core, not the ORM's bulk INSERT (the mapper's work per call)


@dataclasses.dataclass(frozen=True, slots=True)
class Left:
    """What interrupted turns left for the messages a turn starts on."""

    message_id: int | None = None  # a recorded preview, now the new turn's
    unrecorded: UnrecordedPreview | None = None  # else one sent maybe, with no id recorded
    session_id: int | None = None  # the session the turn was recorded in


async def _take_previews(s: AsyncSession, chat_id: int, update_ids: Sequence[int]) -> Left:
    """Detach the previews that ended turns (interrupted ones: their inbox rows are still
    pending) left for these updates, and return the newest; it now belongs to the caller."""
    if not update_ids:
        return Left()
    earlier = select(MessageRow.turn_id).where(
        MessageRow.update_id.in_(update_ids), MessageRow.turn_id.is_not(None)
    )
    left = (
        Turn.chat_id == chat_id,
        Turn.id.in_(earlier),
        Turn.status != TurnStatus.DONE,
        or_(Turn.preview_message_id.is_not(None), Turn.preview_floor.is_not(None)),
    )
    newest = (
        await s.execute(
            select(Turn.preview_message_id, Turn.preview_floor, Turn.preview_text)
            .where(*left)
            .order_by(Turn.started_at.desc())
            .limit(1)
        )
    ).one_or_none()
    if newest is None:
        return Left()
    await s.execute(
        update(Turn)
        .where(*left)
        .values(preview_message_id=None, preview_floor=None, preview_text=None)
    )
    message_id, floor, text = newest
    if message_id is not None:
        return Left(message_id=int(message_id))
    if floor is None or not text:
        return Left()
    return Left(unrecorded=UnrecordedPreview(int(floor), text))


async def start_turn(
    s: AsyncSession,
    turn_id: str,
    chat_id: int,
    session_id: int | None,
    kind: TurnKind,
    inputs: Sequence[tuple[int, str]],
    insert_for: Any,
    *,
    rerun: bool = True,
    untrusted: Mapping[int, Sequence[str]],
    taint: Taint | None,
    requester_id: int | None,
    reply_to: int | None,
    fence: Fence | None = None,
    chat_kind: str = "private",
    lock: bool = False,
) -> Left:
    """`session_id=None`: the chat's open session, read by the turn's INSERT (created on
    first contact)."""
    update_ids = [u for u, _ in inputs]
    # Only messages an earlier turn took (and was interrupted on) can have left a preview.
    left = await _take_previews(s, chat_id, update_ids) if rerun else Left()
    unrecorded = left.unrecorded
    turn = {
        "id": turn_id, "chat_id": chat_id, "kind": kind,
        "status": TurnStatus.RUNNING, "started_at": utcnow(),
        "preview_message_id": left.message_id,
        "preview_floor": unrecorded.floor if unrecorded else None,
        "preview_text": unrecorded.text if unrecorded else None,
        "tainted": taint is not None, "taint_source": taint.label if taint else None,
        "requester_id": requester_id, "reply_to": reply_to,
    }  # fmt: skip
    found = None if session_id is not None else await _insert_in_open_session(s, turn, fence)
    if found is not None:
        session_id = found
    else:
        if session_id is None:  # the chat has no session yet (first contact), or lease lost
            session_id = await open_session(s, chat_id, insert_for, chat_kind, lock=lock)
        await _insert_turn(s, turn | {"session_id": session_id}, fence)
    left = dataclasses.replace(left, session_id=session_id)
    if not inputs:
        return left
    row = {"session_id": session_id, "chat_id": chat_id, "role": Role.USER, "turn_id": turn_id}
    if not untrusted:
        # One statement for all the messages; a redelivered update adds nothing, and a re-run
        # only makes its row name this turn (the claim, `palui.db.inbox.claimed_by`). The
        # rows are its parameters (an executemany), so it is compiled once: a statement of
        # many VALUES rows has no cache key (SQLAlchemy compiled it anew on every turn).
        added = insert_for(MESSAGES)
        await s.execute(
            added.on_conflict_do_update(
                index_elements=["update_id"], set_={"turn_id": added.excluded.turn_id}
            ),
            [
                row | {
                    "content": text, "update_id": update_id, "tainted": False,
                    "created_at": utcnow(),
                }
                for update_id, text in inputs
            ],
        )  # fmt: skip
    else:
        for update_id, text in inputs:
            rows = [(words, True) for words in untrusted.get(update_id, ())]
            if text or not rows:
                rows.append((text, False))
            # The update's first row carries its id: a re-run that finds it adds none.
            for index, (content, tainted) in enumerate(rows):
                added = await s.execute(
                    insert_for(MessageRow)
                    .values(
                        row | {
                            "content": content, "tainted": tainted, "created_at": utcnow(),
                            "update_id": update_id if index == 0 else None,
                        }
                    )
                    .on_conflict_do_nothing(index_elements=["update_id"])
                    .returning(MessageRow.id)  # asyncpg reports no reliable rowcount here
                )  # fmt: skip
                if index == 0 and added.scalar() is None:
                    await s.execute(
                        update(MessageRow)
                        .where(MessageRow.update_id == update_id)
                        .values(turn_id=turn_id)
                    )  # a re-run: the claim
                    break
    return left


async def _insert_turn(s: AsyncSession, turn: dict[str, Any], fence: Fence | None) -> None:
    if fence is None:
        await s.execute(insert(Turn).values(turn))
        return
    # Folded into the turn's own INSERT: a stale holder starts nothing (the transaction,
    # with the session it may have opened, is rolled back).
    added = await s.execute(fenced_insert(Turn, turn, fence).returning(Turn.id))
    if added.scalar_one_or_none() is None:
        raise LeaseLost(fence.chat_id)


async def _insert_in_open_session(
    s: AsyncSession, turn: dict[str, Any], fence: Fence | None
) -> int | None:
    """The turn's INSERT reading its session from the chat's row (`INSERT … SELECT … FROM
    chats`), under `fence` if given; the session, or None when nothing was added (the chat has
    no open session yet, or the lease is lost: the caller goes the long way)."""
    columns = TURN_COLUMNS
    row = select(
        *(literal(v, columns[k].type).label(k) for k, v in turn.items()),
        Chat.current_session_id.label("session_id"),
    ).where(Chat.id == turn["chat_id"], Chat.current_session_id.is_not(None))
    if fence is not None:
        row = row.where(held_by(fence))
    added = await s.execute(
        insert(Turn).from_select([*turn, "session_id"], row).returning(Turn.session_id)
    )
    found = added.scalar_one_or_none()
    return None if found is None else int(found)
