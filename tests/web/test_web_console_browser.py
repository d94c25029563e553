"""The web console in a real headless Chromium: sign in from a /web link, read the turns and a
turn's steps, approve a pending call from the console."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palui.config import Settings
from tests import toolkit
from tests.fakes.browser import Shots, browser, shots  # noqa: F401 (fixtures)
from tests.fakes.memory_channel import (
    approval_cards,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset
from tests.fakes.web_console import link_in


async def follow(page: Any, selector: str) -> None:
    """Click what leads to another page, and wait until that page has loaded."""
    async with page.expect_navigation():
        await page.click(selector)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_sign_in_read_the_turns_and_approve_a_call_on_the_web(
    settings: Settings,
    browser: Any,  # noqa: F811
    shots: Shots,  # noqa: F811
) -> None:
    notes = NotesToolset()
    model = toolkit.ScriptedModel(
        [
            toolkit.call("mcp-notes__search_notes", {"query": "groceries"}),
            toolkit.answer("Note 1 is your grocery list."),
            toolkit.call("mcp-notes__delete_note", {"id": "1"}, call_id="c2"),
            toolkit.answer("Deleted note 1."),
        ]
    )
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        await chat.send("which note has my groceries?")
        await chat.send("delete note 1")
        (card,) = approval_cards(chat)
        await chat.command("web")
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()

        await page.goto(link_in(chat))
        await shots.shoot(page, "signin")
        await follow(page, 'button:has-text("Sign in")')
        assert page.url.endswith("/ui/turns")
        await shots.shoot(page, "turns")
        rows = page.locator("table.turns tbody tr")
        assert await rows.count() == 2
        assert "delete note 1" in await rows.nth(0).inner_text()
        assert "awaiting approval" in await rows.nth(0).inner_text()

        await follow(page, "text=which note has my groceries?")
        await shots.shoot(page, "turn")
        text = await page.inner_text("main")
        listed = await app.store.turn_listing.listing({chat.chat_id})
        (turn,) = [t for t in listed if t.trigger.startswith("which note")]
        assert page.url.endswith(f"/ui/turns/{turn.turn_id}")
        steps = await app.store.runs.steps(turn.turn_id)
        assert {s.stage for s in steps} >= {"policy", "execute"}
        stages = page.locator("table.stages tbody tr")
        assert await stages.count() == len(steps)
        for row, step in enumerate(steps):  # each stage with its decision and reason
            shown = await stages.nth(row).inner_text()
            assert step.stage.replace("_", " ") in shown and step.outcome in shown
            assert step.reason in shown
        assert "mcp-notes__search_notes" in text

        await page.goto(page.url.split("/ui/")[0] + "/ui/turns")
        await follow(page, "text=delete note 1")
        await shots.shoot(page, "turn_waiting")
        assert "The card it waited on" in await page.inner_text("main")

        other = await context.new_page()  # a second tab, loaded while the card still waits
        await follow(page, "nav >> text=Approvals")
        await other.goto(page.url)
        await shots.shoot(page, "approvals")
        assert "mcp-notes__delete_note" in await page.inner_text("main")
        await follow(page, "button.approve")
        assert "Approved" in await page.inner_text(".flash")
        await app.chats.wait_idle(chat.chat_id)
        assert notes.ran("delete_note") == 1
        assert chat.texts()[-1] == "Deleted note 1."
        closed = [c.text for _, _, c in chat.edits]
        assert any("Approved on the web by @ana" in c for c in closed), closed

        await follow(other, "button.approve")  # the stale tab: the approval is used up
        assert "Already decided" in await other.inner_text(".flash")
        await app.chats.wait_idle(chat.chat_id)
        assert notes.ran("delete_note") == 1
        await shots.shoot(other, "approvals_decided")
        assert card.text.startswith("🔐 Approval needed")
        await context.close()
