"""The web console's links and sessions as stored: hashes only, one use, expiry, revocation, and
which group chats a person may see."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import TextClause, text

from palui.db import Store
from palui.db.retention import RetentionDays

TEN_MINUTES = timedelta(minutes=10)
WEEK = timedelta(days=7)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


async def test_a_link_opens_one_session_even_when_two_browsers_race(store: Store) -> None:
    link = await store.web.add_link(7, "@ana", NOW, TEN_MINUTES)
    cookies = await asyncio.gather(*(store.web.redeem(link, NOW, WEEK) for _ in range(4)))
    opened = [c for c in cookies if c is not None]
    assert len(opened) == 1
    session = await store.web.session(opened[0], NOW)
    assert session is not None and session.user_id == 7 and session.display == "@ana"
    assert await store.web.redeem(link, NOW, WEEK) is None


async def test_neither_token_is_stored_as_it_was_given(store: Store) -> None:
    link = await store.web.add_link(7, "@ana", NOW, TEN_MINUTES)
    cookie = await store.web.redeem(link, NOW, WEEK)
    assert cookie is not None
    async with store.db.session() as s:
        rows = [
            str(v)
            for table in ("web_links", "web_sessions")
            for row in (await s.execute(_select_all(table))).all()
            for v in row
        ]
    assert not any(link in v or cookie in v for v in rows)


def _select_all(table: str) -> TextClause:  # a test reads the raw rows; the app never does
    return text(f"SELECT * FROM {table}")


async def test_links_expire_after_ten_minutes_and_sessions_after_their_days(store: Store) -> None:
    late = await store.web.add_link(7, "@ana", NOW, TEN_MINUTES)
    assert await store.web.redeem(late, NOW + TEN_MINUTES, WEEK) is None
    link = await store.web.add_link(7, "@ana", NOW, TEN_MINUTES)
    cookie = await store.web.redeem(link, NOW + timedelta(minutes=9), WEEK)
    assert cookie is not None
    assert await store.web.session(cookie, NOW + timedelta(days=6)) is not None
    assert await store.web.session(cookie, NOW + timedelta(days=7, minutes=9)) is None


async def test_ending_sessions_ends_only_that_persons(store: Store) -> None:
    mine = await store.web.redeem(await store.web.add_link(7, "@ana", NOW, TEN_MINUTES), NOW, WEEK)
    theirs = await store.web.redeem(
        await store.web.add_link(8, "@bob", NOW, TEN_MINUTES), NOW, WEEK
    )
    unused = await store.web.add_link(7, "@ana", NOW, TEN_MINUTES)
    assert mine and theirs
    assert await store.web.end_sessions(7) == 1
    assert await store.web.session(mine, NOW) is None
    assert await store.web.session(theirs, NOW) is not None
    assert await store.web.redeem(unused, NOW, WEEK) is None  # revoking spends open links too


async def test_a_person_sees_the_groups_they_wrote_in(store: Store) -> None:
    await store.inbox.add(1, -500, 7, {"text": "@palui hi"})
    await store.inbox.add(2, -600, 8, {"text": "@palui hello"})
    await store.inbox.add(3, 7, 7, {"text": "hi"})
    assert await store.web.chats_spoken_in(7) == {-500}


async def test_the_daily_prune_drops_spent_links_and_ended_sessions(store: Store) -> None:
    old = await store.web.add_link(7, "@ana", NOW - timedelta(days=9), TEN_MINUTES)
    assert await store.web.redeem(old, NOW - timedelta(days=9), WEEK) is not None
    fresh = await store.web.redeem(await store.web.add_link(7, "@ana", NOW, TEN_MINUTES), NOW, WEEK)
    pruned = await store.retention.prune(RetentionDays(), NOW)
    assert pruned.get("web_links") == 1 and pruned.get("web_sessions") == 1
    assert fresh is not None and await store.web.session(fresh, NOW) is not None
