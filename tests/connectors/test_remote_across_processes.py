"""Remote MCP sign-ins and servers' questions with two Palui processes on one database: the
browser's return, a pasted address and a typed answer reach whichever process they reach, and
that process completes what the other started. Also: a sign-in's state is used once and
expires; /stop cancels the questions its turn left open."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import html
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import aiohttp
from sqlalchemy import text

from palui.connectors.signin import SOMEONE_ELSES, UNKNOWN_STATE
from palui.domain import Card
from tests.fakes.memory_channel import MemoryChannel, button, switch_on
from tests.fakes.remote_palui import (
    connect_link,
    connected,
    follow,
    palui_with_tracker,
    second_palui,
)
from tests.fakes.watched_channel import BOUND_S
from tests.toolkit import ScriptedModel, answer, call

OTHER_USER = 4242


async def landing(link: str) -> str:
    """Where the authorization server sends the browser back (not followed)."""
    landed = await follow(link, redirects=False)
    return landed.headers["Location"]


async def test_the_browsers_return_to_the_other_process_completes_the_sign_in(
    database_url: str, tmp_path: Path
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as a, second_palui(a) as b:
        callback = await landing(await connect_link(a.chat))
        # Both processes behind one URL: this time the return reaches B.
        at_b = callback.replace(a.app.http.url, b.app.http.url)
        first = await follow(at_b)
        done = await a.chat.wait_for(connected)
        again_at_a = await follow(callback)
        again_at_b = await follow(at_b)
        async with a.app.db.session() as s:
            left = (await s.execute(text("SELECT count(*) FROM oauth_sign_ins"))).scalar()

    assert at_b != callback
    assert first.status == 200
    assert done.startswith("✅ mcp-tracker connected: 5 tools")
    assert again_at_a.status == 400 and again_at_b.status == 400
    assert left == 0  # the state is gone once its sign-in ended


async def test_the_state_is_kept_only_as_its_hash_with_who_started_it(
    database_url: str, tmp_path: Path
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        link = await connect_link(t.chat)
        state = dict(parse_qsl(urlsplit(link).query))["state"]
        async with t.app.db.session() as s:
            rows = (await s.execute(text("SELECT state_hash, user_id FROM oauth_sign_ins"))).all()
        await follow(link)
        await t.chat.wait_for(connected)

    assert [row.user_id for row in rows] == [MemoryChannel.user_id]
    assert rows[0].state_hash == hashlib.sha256(state.encode()).hexdigest()


async def test_an_expired_state_is_refused(database_url: str, tmp_path: Path) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        callback = await landing(await connect_link(t.chat))
        past = datetime.now(UTC) - timedelta(seconds=1)
        async with t.app.db.session() as s, s.begin():
            await s.execute(text("UPDATE oauth_sign_ins SET expires_at = :past"), {"past": past})
        async with aiohttp.ClientSession() as browser, browser.get(callback) as refused:
            page = await refused.text()

    assert refused.status == 400 and html.escape(UNKNOWN_STATE, quote=True) in page
    assert not any(connected(said) for said in t.chat.texts())


async def test_an_address_pasted_in_the_other_process_completes_the_sign_in(
    database_url: str, tmp_path: Path
) -> None:
    web_url = "https://palui.example"  # the browser ends on an address it cannot reach
    allowed = frozenset({MemoryChannel.user_id, OTHER_USER})
    async with (
        palui_with_tracker(
            database_url, tmp_path, documents=True, web_url=web_url, allowed_users=allowed
        ) as a,
        second_palui(a) as b,
    ):
        address = await landing(await connect_link(a.chat))
        # Someone else pasting it (in their own private chat with Palui) is refused.
        theirs = b.chat.inbound(text=address, user_id=OTHER_USER)
        await b.chat.push(dataclasses.replace(theirs, chat_id=OTHER_USER))
        refused = await b.chat.wait_for(lambda said: True, chat_id=OTHER_USER)
        pasted = b.chat.inbound(text=address, message_id=77)
        await b.chat.push(pasted)
        done = await a.chat.wait_for(connected)
        async with a.app.db.session() as s:
            stored = (await s.execute(text("SELECT content FROM messages"))).all()

    assert refused == SOMEONE_ELSES
    assert "Got it, signing in…" in b.chat.texts()
    assert done == "✅ mcp-tracker connected: 5 tools (as Palui's client metadata document)."
    assert 77 in b.chat.deleted
    assert not any("oauth/callback" in row.content for row in stored)  # never in the history


async def test_a_typed_answer_received_by_the_other_process_answers_the_question(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel([call("mcp-tracker__plan_release", {"name": "v2"}), answer("Planned.")])
    b_model = ScriptedModel([], forever=answer("B should not be asked"))
    async with (
        palui_with_tracker(database_url, tmp_path, model=model, trust="trusted") as a,
        second_palui(a, b_model) as b,
    ):
        await follow(await connect_link(a.chat))
        await a.chat.wait_for(connected)
        await switch_on(a.app, "mcp-tracker", "plan_release")
        turn = asyncio.create_task(a.chat.send("plan the v2 release"))
        await a.chat.wait_for_card(lambda c: "(1/3) When" in c.text)
        await b.chat.send("tomorrow at noon")  # A asked; the message reaches B
        await a.chat.wait_for_card(lambda c: "(2/3) Hours" in c.text)
        await b.chat.send("3")
        urgent = await a.chat.wait_for_card(lambda c: "(3/3) Urgent" in c.text)
        await b.chat.tap(button(urgent, "No"))  # a tap reaching B too
        async with asyncio.timeout(BOUND_S):
            await turn

    sent = model.calls[-1][0]
    assert "v2: tomorrow at noon, 3 h, urgent=False" in str(sent[-1].content)
    assert not any("tomorrow" in str(m.content) for m in sent[:-1])  # never in the history
    assert b_model.calls == []  # B ran no turn with them
    assert a.chat.texts()[-1] == "Planned."


def stopped(card: Card) -> bool:
    return card.text.endswith("→ cancelled: the turn was stopped")


async def test_a_question_left_open_by_stop_cannot_be_answered_later(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [call("mcp-tracker__plan_release", {"name": "v2"})], forever=answer("A new turn.")
    )
    async with palui_with_tracker(database_url, tmp_path, model=model, trust="trusted") as t:
        await follow(await connect_link(t.chat))
        await t.chat.wait_for(connected)
        await switch_on(t.app, "mcp-tracker", "plan_release")
        turn = asyncio.create_task(t.chat.send("plan the v2 release"))
        asked = await t.chat.wait_for_card(lambda c: "(1/3) When" in c.text)
        await t.chat.command("stop")
        async with asyncio.timeout(BOUND_S):
            await turn
        [(_, _, edited)] = [e for e in t.chat.edits if stopped(e[2])]
        tap = t.chat.inbound(callback_data=button(asked, "Decline"))
        await t.chat.push(tap)
        toast = await t.chat.wait_for_toast(f"cb{tap.update_id}")
        await t.chat.send("tomorrow at noon")  # not an answer any more: a message for a turn
        async with t.app.db.session() as s:
            statuses = (await s.execute(text("SELECT status FROM server_questions"))).all()

    assert edited.text.startswith(asked.text) and edited.keyboard == ()
    assert toast == "This question is no longer open."
    assert [row.status for row in statuses] == ["cancelled"]
    assert not any("continued after your answer" in said for said in t.chat.texts())
    assert "tomorrow at noon" in str(model.calls[-1][0][-1].content)
