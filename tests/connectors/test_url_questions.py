"""A server asks the person to open a page during a call (MCP elicitation, URL mode): the fake
desk server (tests/fakes/asking_server.py) on loopback, Palui in this process; the test taps
the card's buttons and plays the browser that opens the page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import text

from palui.domain import Card
from tests.fakes.asking_server import Desk, desk_served
from tests.fakes.memory_channel import button, in_memory_settings, running_palui, switch_on
from tests.fakes.watched_channel import BOUND_S, WatchedChannel
from tests.toolkit import ScriptedModel, answer, call


@dataclass
class Setup:
    app: Any
    chat: WatchedChannel
    desk: Desk


@asynccontextmanager
async def palui_with_desk(
    database_url: str, tmp_path: Path, model: ScriptedModel, *, legacy: bool = False
) -> AsyncIterator[Setup]:
    async with desk_served(legacy=legacy) as (desk, url):
        settings = in_memory_settings(
            database_url, str(tmp_path / "data"), mcp={"desk": {"url": url, "trust": "trusted"}}
        )
        chat = WatchedChannel()
        async with running_palui(settings, model, chat) as (app, _):
            connector = app.connectors.get("mcp-desk")
            await connector.wait_settled()
            await switch_on(app, "mcp-desk", "read_statement", "get_balance")
            yield Setup(app, chat, desk)


def asks_to_open(card: Card) -> bool:
    return card.text.startswith("🔗 mcp-desk asks you to open a page")


def page_button(card: Card) -> str:
    (url,) = [b.url for row in card.keyboard for b in row if b.url]
    return url


async def open_in_browser(url: str) -> None:
    async with aiohttp.ClientSession() as browser, browser.get(url) as response:
        assert response.status == 200


def tool_result(model: ScriptedModel) -> str:
    return str(model.calls[-1][0][-1].content)


@pytest.mark.parametrize(
    ("tapped", "result", "action"),
    [
        ("✅ Done", "May: 3 payments", "accept"),
        ("Decline", "no statement: decline", "decline"),
        ("Cancel", "no statement: cancel", "cancel"),
    ],
)
async def test_a_page_to_open_is_shown_exactly_and_answered_by_a_tap(
    database_url: str, tmp_path: Path, tapped: str, result: str, action: str
) -> None:
    model = ScriptedModel([call("mcp-desk__read_statement", {"month": "May"}), answer("Here.")])
    async with palui_with_desk(database_url, tmp_path, model) as t:
        turn = asyncio.create_task(t.chat.send("read my May statement"))
        card = await t.chat.wait_for_card(asks_to_open)
        await t.chat.tap(button(card, tapped))
        async with asyncio.timeout(BOUND_S):
            await turn
        async with t.app.db.session() as s:
            turns = (await s.execute(text("SELECT tainted, taint_source FROM turns"))).all()
            rows = (await s.execute(text("SELECT status FROM server_questions"))).all()

    page = f"{t.desk.base}/page?for=statement"
    assert card.text.splitlines() == [
        "🔗 mcp-desk asks you to open a page (the server's words, not Palui's):",
        "Sign in to the desk to read the May statement.",
        "",
        page,
        "",
        "Tap ✅ Done once you have finished there.",
    ]
    assert [[b.label for b in row] for row in card.keyboard] == [
        ["🔗 Open the page"],
        ["✅ Done"],
        ["Decline", "Cancel"],
    ]
    assert page_button(card) == page  # the address as the server gave it
    assert t.desk.opened == []  # nothing fetched the page: only the person opens it
    assert t.desk.actions == [action]
    assert result in tool_result(model)
    assert t.chat.texts()[-1] == "Here."
    assert [row.status for row in rows] == ["taken"]
    assert any(row.tainted and "mcp-desk" in (row.taint_source or "") for row in turns)


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("javascript:alert(document.cookie)", "its address is not a web address (http or https)"),
        ("data:text/html,<script>alert(1)</script>", "is not a web address (http or https)"),
        ("https://bank.example@evil.example/login", "it has a user name before its host"),
        ("https://evil.example\\@bank.example/", "it has a backslash before or right after"),
    ],
)
async def test_an_address_a_browser_would_read_otherwise_is_declined_with_a_note(
    database_url: str, tmp_path: Path, address: str, why: str
) -> None:
    model = ScriptedModel([call("mcp-desk__read_statement", {"month": "May"}), answer("Sorry.")])
    async with palui_with_desk(database_url, tmp_path, model) as t:
        t.desk.page_url = address
        await t.chat.send("read my May statement")

    (note,) = [c.text for c in t.chat.cards if "asked you to open a page" in c.text]
    assert note.startswith("⚠️ mcp-desk asked you to open a page; Palui declined it: ")
    assert why in note
    assert address not in note
    assert not any(asks_to_open(c) for c in t.chat.cards)
    assert t.desk.actions == ["decline"]
    assert "no statement: decline" in tool_result(model)


async def test_the_servers_completion_notice_ends_the_wait(
    database_url: str, tmp_path: Path
) -> None:
    """The older protocol: the page's id is the question's; the person opens the page and
    never taps, the server says the page is done, and the call goes on."""
    model = ScriptedModel([call("mcp-desk__read_statement", {"month": "May"}), answer("Here.")])
    async with palui_with_desk(database_url, tmp_path, model, legacy=True) as t:
        turn = asyncio.create_task(t.chat.send("read my May statement"))
        card = await t.chat.wait_for_card(asks_to_open)
        await open_in_browser(page_button(card))
        async with asyncio.timeout(BOUND_S):
            await turn

    assert t.desk.actions == ["accept"]
    assert "May: 3 payments" in tool_result(model)
    edited = [c.text for _, _, c in t.chat.edits]
    assert edited == [f"{card.text}\n→ done (mcp-desk says the page is finished)"]


async def test_a_call_refused_until_a_page_is_opened_is_sent_again_once_it_is(
    database_url: str, tmp_path: Path
) -> None:
    """The older protocol's -32042: the call is refused with a page to open; once the server
    says the page is done, the same call goes again and answers."""
    model = ScriptedModel([call("mcp-desk__get_balance", {}), answer("Twelve.")])
    async with palui_with_desk(database_url, tmp_path, model, legacy=True) as t:
        turn = asyncio.create_task(t.chat.send("what is my balance?"))
        card = await t.chat.wait_for_card(asks_to_open)
        await open_in_browser(page_button(card))
        async with asyncio.timeout(BOUND_S):
            await turn

    assert "Confirm it is you on the desk's page." in card.text
    assert "balance: 12 €" in tool_result(model)


async def test_a_refused_call_whose_page_is_declined_ends_so(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel([call("mcp-desk__get_balance", {}), answer("No balance.")])
    async with palui_with_desk(database_url, tmp_path, model, legacy=True) as t:
        turn = asyncio.create_task(t.chat.send("what is my balance?"))
        card = await t.chat.wait_for_card(asks_to_open)
        await t.chat.tap(button(card, "Decline"))
        async with asyncio.timeout(BOUND_S):
            await turn

    assert t.desk.opened == []
    assert "The person declined opening the page mcp-desk asked for first." in tool_result(model)


async def test_a_page_question_pending_across_a_restart_is_answered_after(
    database_url: str, tmp_path: Path
) -> None:
    """The 2026 protocol's round: the server did nothing yet, so a ✅ Done given after a
    restart continues the call from the stored state, once."""
    model = ScriptedModel([call("mcp-desk__read_statement", {"month": "May"}), answer("Here.")])
    chat = WatchedChannel()  # one person's chat across both runs
    async with desk_served() as (desk, url):
        settings = in_memory_settings(
            database_url, str(tmp_path / "data"), mcp={"desk": {"url": url, "trust": "trusted"}}
        )
        async with running_palui(settings, model, chat) as (app, _):
            await app.connectors.get("mcp-desk").wait_settled()
            await switch_on(app, "mcp-desk", "read_statement")
            asked = asyncio.create_task(chat.send("read my May statement"))
            card = await chat.wait_for_card(asks_to_open)
            asked.cancel()  # Palui stops with the question open
        async with running_palui(settings, ScriptedModel([]), chat) as (app, _):
            await app.connectors.get("mcp-desk").wait_settled()
            await chat.tap(button(card, "✅ Done"))
            shown = await chat.wait_for(lambda t: "continued after your answer" in t)

    assert shown.splitlines() == [
        "mcp-desk__read_statement, continued after your answer (the server's words, not Palui's):",
        "May: 3 payments",
    ]
    assert desk.actions == ["accept"]
