"""A turn's start and the chat lease run statements built once, every value a bind parameter
(issue 14): each value must still reach its column through the column's type, and each variant
(fenced or not, first contact or not, several updates, untrusted rows) must still write the
same rows. Through the store, on each database."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, text

from palui.db.models import ChatLease, MessageRow, Turn
from palui.domain import Taint, UnrecordedPreview
from palui.domain.turn_record import TurnStart

CHAT = 7170


# How SQLAlchemy's UTC column stores a time on SQLite (a value bound without the column's type
# would be stored by the driver's own adapter, "+00:00" and all, and compare as another string).
STORED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}")


async def _stored_times(store: Any, query: str) -> list[str]:
    """The raw times a query reads, on SQLite (PostgreSQL keeps a timestamptz: nothing to see)."""
    if not store.db.is_sqlite:
        return []
    async with store.db.session() as s:
        return [str(value) for value in await s.scalars(text(query))]


async def _turn(store: Any, turn_id: str) -> Turn:
    async with store.db.session() as s:
        return (await s.execute(select(Turn).where(Turn.id == turn_id))).scalar_one()


async def test_every_way_a_turn_starts_writes_its_row_as_given(store: Any) -> None:
    fence = await store.leases.take(CHAT, "h", ttl_s=600)
    before = datetime.now(UTC)
    # First contact (the long way), fenced; then in the open session, fenced and not.
    taint = Taint.from_label("mcp-web:fetch")
    sid, *_ = await store.turns.start_chat_turn(
        TurnStart("a", CHAT, [(1, "hi")], fence=fence, taint=taint, requester_id=5, reply_to=9),
        rerun=False,
    )
    assert (await store.turns.start_chat_turn(TurnStart("b", CHAT, [(2, "yo")], fence=fence)))[
        0
    ] == sid
    assert (await store.turns.start_chat_turn(TurnStart("c", CHAT, [(3, "so")]), rerun=False))[
        0
    ] == sid
    # First contact, not fenced; and with the session given.
    other, *_ = await store.turns.start_chat_turn(
        TurnStart("d", CHAT + 1, [(4, "hey")]), rerun=False
    )
    await store.turns.start(TurnStart("e", CHAT, [(5, "x")], session_id=sid, fence=fence))
    await store.turns.start(TurnStart("f", CHAT, session_id=sid))
    after = datetime.now(UTC)

    a = await _turn(store, "a")
    assert (a.chat_id, a.session_id, a.kind, a.status) == (CHAT, sid, "chat", "running")
    assert (a.tainted, a.taint_source, a.requester_id, a.reply_to) == (True, taint.label, 5, 9)
    assert (a.preview_message_id, a.preview_floor, a.preview_text, a.steps) == (None,) * 3 + (0,)
    for turn_id, chat, session in [("b", CHAT, sid), ("c", CHAT, sid), ("d", CHAT + 1, other)]:
        row = await _turn(store, turn_id)
        assert (row.chat_id, row.session_id, row.tainted, row.taint_source) == (
            chat, session, False, None,
        )  # fmt: skip
        assert (row.requester_id, row.reply_to, row.preview_message_id) == (None, None, None)
    for turn_id in "abcdef":
        started = (await _turn(store, turn_id)).started_at
        assert started.tzinfo is not None and before <= started <= after
    history = await store.chats.history(sid, 10)
    assert [m.content for m in history.messages] == ["hi", "yo", "so", "x"]
    for stored in await _stored_times(store, "SELECT started_at FROM turns"):
        assert STORED.fullmatch(stored), stored
    for stored in await _stored_times(store, "SELECT created_at FROM messages"):
        assert STORED.fullmatch(stored), stored


async def test_a_rerun_on_several_updates_takes_the_newest_preview_and_detaches_them_all(
    store: Any,
) -> None:
    await store.turns.start_chat_turn(TurnStart("a", CHAT, [(1, "hi")]), rerun=False)
    await store.turns.record_preview("a", 77)  # "a" died with its preview recorded
    await store.turns.start_chat_turn(TurnStart("b", CHAT, [(2, "and")]), rerun=False)
    await store.turns.preview_going_out("b", 80, "Hel")  # "b" died sending one, unrecorded
    await store.turns.start_chat_turn(TurnStart("z", CHAT, [(3, "other")]), rerun=False)
    await store.turns.record_preview("z", 99)  # not on these updates: not taken

    session, message_id, unrecorded, *_ = await store.turns.start_chat_turn(
        TurnStart("c", CHAT, [(1, "hi"), (2, "and")])
    )
    assert (message_id, unrecorded) == (None, UnrecordedPreview(80, "Hel"))  # "b" is newer
    for turn_id in "ab":
        row = await _turn(store, turn_id)
        assert (row.preview_message_id, row.preview_floor, row.preview_text) == (None,) * 3
    assert (await _turn(store, "z")).preview_message_id == 99
    # Both updates are "c"'s now, each message stored once.
    history = await store.chats.history(session, 10)
    assert [m.content for m in history.messages] == ["hi", "and", "other"]
    assert [p.turn_id for p in history.provenance] == ["c", "c", "z"]
    c = await _turn(store, "c")  # it inherits the preview: a crash leaves it to the next
    assert (c.preview_message_id, c.preview_floor, c.preview_text) == (None, 80, "Hel")
    _, message_id, unrecorded, *_ = await store.turns.start_chat_turn(
        TurnStart("d", CHAT, [(1, "hi"), (2, "and")])
    )
    assert (message_id, unrecorded) == (None, UnrecordedPreview(80, "Hel"))
    assert (await _turn(store, "c")).preview_floor is None


async def test_an_untrusted_rerun_adds_no_row_and_claims_the_update(store: Any) -> None:
    await store.inbox.add(1, CHAT, 1, {"update_id": 1, "text": "mine"})
    sid, *_ = await store.turns.start_chat_turn(
        TurnStart("a", CHAT, [(1, "mine")], untrusted={1: ["theirs", "more"]}), rerun=False
    )
    await store.turns.start_chat_turn(
        TurnStart("b", CHAT, [(1, "mine")], untrusted={1: ["theirs"]})
    )
    assert [item.turn_id for item in await store.inbox.pending(CHAT)] == ["b"]
    async with store.db.session() as s:
        rows = (
            await s.execute(
                select(MessageRow.content, MessageRow.tainted, MessageRow.update_id)
                .where(MessageRow.session_id == sid)
                .order_by(MessageRow.id)
            )
        ).all()
    # The update's first row carries its id (the untrusted words come first).
    assert [tuple(r) for r in rows] == [
        ("theirs", True, 1),
        ("more", True, None),
        ("mine", False, None),
    ]


async def test_a_lease_lapses_by_its_time_and_is_released_only_by_its_take(store: Any) -> None:
    lapsed = await store.leases.take(CHAT, "a", ttl_s=-1)
    assert lapsed is not None
    taken = await store.leases.take(CHAT, "b", ttl_s=600)  # the lapsed row is free
    assert taken is not None and taken.generation == lapsed.generation + 1
    assert await store.leases.take(CHAT, "a", ttl_s=600) is None  # a live one is not
    await store.leases.release(CHAT, "b", taken.generation - 1)  # a stale release: nothing
    assert await store.leases.take(CHAT, "a", ttl_s=600) is None
    for stored in await _stored_times(store, "SELECT expires_at FROM chat_leases"):
        assert STORED.fullmatch(stored), stored
    assert await store.leases.renew(taken, ttl_s=600)
    for stored in await _stored_times(store, "SELECT expires_at FROM chat_leases"):
        assert STORED.fullmatch(stored), stored
    async with store.db.session() as s:
        row = await s.get_one(ChatLease, CHAT)
    assert row.expires_at.tzinfo is not None
    assert timedelta(seconds=590) < row.expires_at - datetime.now(UTC) <= timedelta(seconds=600)
    await store.leases.release(CHAT, "b", taken.generation)
    assert await store.leases.holders() == []
    again = await store.leases.take(CHAT, "a", ttl_s=600)
    assert again is not None and again.generation == taken.generation + 1
    # The delivery lease can't be taken while another process holds the chat lease.
    assert await store.delivery_leases.take(CHAT, "b", ttl_s=600) is None
    assert await store.delivery_leases.take(CHAT, "a", ttl_s=600) is not None
