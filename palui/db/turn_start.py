"""A turn's start, in the caller's transaction: the turn's row (reading the chat's open session
in its own INSERT), the person's messages (which claim their updates,
`palui.db.inbox.claimed_by`), and the previews interrupted turns left for the same messages
(`palui.db.turns.TurnRepo.start_chat_turn`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, and_, bindparam, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.leases import fence_params, fenced_insert_params, held_by_params
from palui.db.models import Chat, MessageRow, Turn, utcnow
from palui.db.repo import DIALECTS, insert_for
from palui.db.sessions import open_session
from palui.domain import Fence, Role, TurnKind, TurnStatus, UnrecordedPreview
from palui.domain.turn_record import TurnStart
from palui.errors import LeaseLost

TURN_COLUMNS = Turn.__table__.columns
# Core, not the ORM's bulk INSERT (the mapper's work per call)
MESSAGES, TURNS = cast(Table, MessageRow.__table__), cast(Table, Turn.__table__)
CHATS = cast(Table, Chat.__table__)
# The turn row's values (`start_turn`), each its statements' bind parameter of the same name.
TURN_KEYS = (
    "id",
    "chat_id",
    "kind",
    "status",
    "started_at",
    "preview_message_id",
    "preview_floor",
    "preview_text",
    "tainted",
    "taint_source",
    "requester_id",
    "reply_to",
    "model",
    "voice",
    "trace_id",
)
# Read from the chat's row by the turn's INSERT (`_chosen`): its /model and /voice choices.
CHOSEN = ("model", "voice")


# A turn's start, built once (a statement built per call costs ~0.7 ms of CPU in SQLAlchemy,
# more than SQLite takes to run it): by fence or not; the message INSERTs by dialect (ON
# CONFLICT).
def _in_open_session(fenced: bool) -> Any:
    chat_id = bindparam("chat_id", type_=TURN_COLUMNS["chat_id"].type)
    row = select(
        *((chat_id if k == "chat_id" else _chosen(k)).label(k) for k in TURN_KEYS),
        CHATS.c.current_session_id.label("session_id"),
    ).where(CHATS.c.id == chat_id, CHATS.c.current_session_id.is_not(None))
    if fenced:
        row = row.where(held_by_params())
    stmt = insert(TURNS).from_select([*TURN_KEYS, "session_id"], row)
    return stmt.returning(TURNS.c.session_id, TURNS.c.model, TURNS.c.voice)


def _chosen(key: str) -> Any:
    """A turn value for its INSERT … SELECT: the chat's choice, or the bind parameter."""
    if key == "model":
        return CHATS.c.model
    if key == "voice":  # spoken only when it answers a voice note and the chat wants it so
        return and_(bindparam("voice", type_=TURN_COLUMNS["voice"].type), CHATS.c.voice_replies)
    return bindparam(key, type_=TURN_COLUMNS[key].type)


_CHOICES = select(CHATS.c.model, CHATS.c.voice_replies).where(
    CHATS.c.id == bindparam("chat_id", type_=CHATS.c.id.type)
)


def _previews() -> tuple[Any, Any]:
    """The newest preview interrupted turns left for `update_ids` in `in_chat`, and the UPDATE
    detaching them all."""
    m, t = MESSAGES.c, TURNS.c
    earlier = select(m.turn_id).where(
        m.update_id.in_(bindparam("update_ids", expanding=True)), m.turn_id.is_not(None)
    )
    left = (
        t.chat_id == bindparam("in_chat", type_=t.chat_id.type),
        t.id.in_(earlier),
        t.status != TurnStatus.DONE,
        or_(t.preview_message_id.is_not(None), t.preview_floor.is_not(None)),
    )
    newest = (
        select(t.id, t.preview_message_id, t.preview_floor, t.preview_text)
        .where(*left)
        .order_by(t.started_at.desc())
        .limit(1)
    )
    detach = update(TURNS).where(*left)
    return newest, detach.values(preview_message_id=None, preview_floor=None, preview_text=None)


_IN_OPEN_SESSION = {fenced: _in_open_session(fenced) for fenced in (False, True)}
_INSERT_TURN = insert(TURNS)  # the row's values are its parameters
_INSERT_TURN_FENCED = fenced_insert_params(Turn, [*TURN_KEYS, "session_id"]).returning(TURNS.c.id)
_NEWEST_PREVIEW, _DETACH_PREVIEWS = _previews()
_CLAIM = (
    update(MESSAGES)
    .where(MESSAGES.c.update_id == bindparam("claimed", type_=MESSAGES.c.update_id.type))
    .values(turn_id=bindparam("turn_id", type_=MESSAGES.c.turn_id.type))
)


def _message_inserts(is_sqlite: bool) -> tuple[Any, Any]:
    """The dialect's two message INSERTs: the person's messages (a re-run's claims them), and
    one untrusted or person's row (a re-run's adds nothing, RETURNING says so)."""
    added = insert_for(is_sqlite)(MESSAGES)
    upsert = added.on_conflict_do_update(
        index_elements=["update_id"], set_={"turn_id": added.excluded.turn_id}
    )
    once = insert_for(is_sqlite)(MESSAGES).on_conflict_do_nothing(index_elements=["update_id"])
    # RETURNING: asyncpg reports no reliable rowcount here.
    return upsert, once.returning(MESSAGES.c.id)


_MESSAGE_INSERTS = {is_sqlite: _message_inserts(is_sqlite) for is_sqlite in DIALECTS}


@dataclasses.dataclass(frozen=True, slots=True)
class Left:
    """What interrupted turns left for the messages a turn starts on."""

    message_id: int | None = None  # a recorded preview, now the new turn's
    unrecorded: UnrecordedPreview | None = None  # else one sent maybe, with no id recorded
    session_id: int | None = None  # the session the turn was recorded in
    model: str | None = None  # the chat's chosen model (/model), None: the default
    voice: bool = False  # its answer is also spoken


async def _take_previews(s: AsyncSession, chat_id: int, update_ids: Sequence[int]) -> Left:
    """Detach the previews that ended turns (interrupted ones: their inbox rows are still
    pending) left for these updates, and return the newest; it now belongs to the caller."""
    if not update_ids:
        return Left()
    params = {"in_chat": chat_id, "update_ids": list(update_ids)}
    newest = (await s.execute(_NEWEST_PREVIEW, params)).one_or_none()
    if newest is None:
        return Left()
    await s.execute(_DETACH_PREVIEWS, params)
    _, message_id, floor, text = newest
    if message_id is not None:
        return Left(message_id=int(message_id))
    if floor is None or not text:
        return Left()
    return Left(unrecorded=UnrecordedPreview(int(floor), text))


async def left_unrecorded(
    s: AsyncSession, chat_id: int, update_ids: Sequence[int]
) -> tuple[str, UnrecordedPreview] | None:
    """The preview an interrupted turn for these updates was sending with no id recorded (the
    one the next start would take), with that turn's id; nothing is detached."""
    if not update_ids:
        return None
    params = {"in_chat": chat_id, "update_ids": list(update_ids)}
    newest = (await s.execute(_NEWEST_PREVIEW, params)).one_or_none()
    if newest is None:
        return None
    turn_id, message_id, floor, text = newest
    if message_id is not None or floor is None or not text:
        return None
    return str(turn_id), UnrecordedPreview(int(floor), text)


async def start_turn(
    s: AsyncSession,
    start: TurnStart,
    is_sqlite: bool,
    *,
    rerun: bool = True,
    chat_kind: str = "private",
    lock: bool = False,
) -> Left:
    """`start.session_id=None`: the chat's open session, read by the turn's INSERT (created on
    first contact), with the chat's choices: its model (else `start.model`), and whether the
    answer is spoken (`start.voice` and the chat has /voice on). `rerun=False`: no earlier turn
    took these messages, so none left a preview."""
    turn_id, chat_id, session_id, kind = start.turn_id, start.chat_id, start.session_id, start.kind
    inputs, authors = start.inputs, start.authors
    taint, fence, untrusted = start.taint, start.fence, start.untrusted
    update_ids = [u for u, _ in inputs]
    # Only messages an earlier turn took (and was interrupted on) can have left a preview.
    left = await _take_previews(s, chat_id, update_ids) if rerun else Left()
    unrecorded = left.unrecorded
    turn = {
        "id": turn_id,
        "chat_id": chat_id,
        "kind": start.kind,
        "status": TurnStatus.RUNNING,
        "started_at": utcnow(),
        "preview_message_id": left.message_id,
        "preview_floor": unrecorded.floor if unrecorded else None,
        "preview_text": unrecorded.text if unrecorded else None,
        "tainted": taint is not None,
        "taint_source": taint.label if taint else None,
        "requester_id": start.requester_id,
        "reply_to": start.reply_to,
        "model": start.model,
        "voice": start.voice,
        "trace_id": start.trace_id,
    }
    found = None if session_id is not None else await _insert_in_open_session(s, turn, fence)
    if found is not None:
        session_id, turn["model"], turn["voice"] = found
    else:
        if session_id is None:  # the chat has no session yet (first contact), or lease lost
            session_id = await open_session(s, chat_id, insert_for(is_sqlite), chat_kind, lock=lock)
            if kind is TurnKind.CHAT:
                chosen, spoken = (await s.execute(_CHOICES, {"chat_id": chat_id})).one()
                turn.update(model=chosen, voice=start.voice and spoken)
        await _insert_turn(s, turn | {"session_id": session_id}, fence)
    chosen_model = cast(str | None, turn["model"])
    left = dataclasses.replace(
        left, session_id=session_id, model=chosen_model, voice=bool(turn["voice"])
    )
    if not inputs:
        return left
    row = {"session_id": session_id, "chat_id": chat_id, "role": Role.USER, "turn_id": turn_id}
    upsert, once = _MESSAGE_INSERTS[is_sqlite]
    if not untrusted:
        # One statement for all the messages; a redelivered update adds nothing, and a re-run
        # only makes its row name this turn (the claim, `palui.db.inbox.claimed_by`). The
        # rows are its parameters (an executemany), so it is compiled once: a statement of
        # many VALUES rows has no cache key (SQLAlchemy compiled it anew on every turn).
        await s.execute(
            upsert,
            [
                row
                | {
                    "content": text,
                    "update_id": update_id,
                    "tainted": False,
                    "created_at": utcnow(),
                    "author": authors.get(update_id),
                }
                for update_id, text in inputs
            ],
        )
    else:
        for update_id, text in inputs:
            rows = [(words, True) for words in untrusted.get(update_id, ())]
            if text or not rows:
                rows.append((text, False))
            # The update's first row carries its id: a re-run that finds it adds none.
            for index, (content, tainted) in enumerate(rows):
                added = await s.execute(
                    once,
                    row
                    | {
                        "content": content,
                        "tainted": tainted,
                        "created_at": utcnow(),
                        "update_id": update_id if index == 0 else None,
                        "author": None if tainted else authors.get(update_id),
                    },
                )
                if index == 0 and added.scalar() is None:
                    # A re-run: the claim.
                    await s.execute(_CLAIM, {"claimed": update_id, "turn_id": turn_id})
                    break
    return left


async def _insert_turn(s: AsyncSession, turn: dict[str, Any], fence: Fence | None) -> None:
    if fence is None:
        await s.execute(_INSERT_TURN, turn)
        return
    # Folded into the turn's own INSERT: a stale holder starts nothing (the transaction,
    # with the session it may have opened, is rolled back).
    added = await s.execute(_INSERT_TURN_FENCED, turn | fence_params(fence))
    if added.scalar_one_or_none() is None:
        raise LeaseLost(fence.chat_id)


async def _insert_in_open_session(
    s: AsyncSession, turn: dict[str, Any], fence: Fence | None
) -> tuple[int, str | None, bool] | None:
    """The turn's INSERT reading its session from the chat's row (`INSERT … SELECT … FROM
    chats`), under `fence` if given; the session, or None when nothing was added (the chat has
    no open session yet, or the lease is lost: the caller goes the long way), with the turn's
    model and voice as the chat's row made them."""
    if fence is None:
        added = await s.execute(_IN_OPEN_SESSION[False], turn)
    else:
        added = await s.execute(_IN_OPEN_SESSION[True], turn | fence_params(fence))
    found = added.one_or_none()
    return None if found is None else (int(found[0]), found[1], bool(found[2]))
