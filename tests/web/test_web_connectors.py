"""The web console's Connectors page: the same switches as /connectors, the same stored settings
(the settings version moves, so every process reloads), and the next turn is offered what the
page set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from palui.config import Settings
from tests import toolkit
from tests.fakes.browser import Shots, browser, shots  # noqa: F401 (fixtures)
from tests.fakes.memory_channel import in_memory_settings, running_palui, switch_on
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset
from tests.fakes.web_console import link_in, signed_in


async def follow(page: Any, selector: str) -> None:
    """Click what leads to another page, and wait until that page has loaded."""
    async with page.expect_navigation():
        await page.click(selector)


async def _text(**_: object) -> str:
    return "found"


def notes() -> toolkit.FunctionToolset:
    return toolkit.FunctionToolset(
        "fn", {"find_notes": _text, "add_note": _text}, read_only=["find_notes"]
    )


def fn_card(chat) -> str:
    """The fn connector's /connectors card, as last sent."""
    return next(s.card.text for s in reversed(chat.sent_cards) if s.card.text.startswith("fn "))


def offered(model: toolkit.ScriptedModel) -> set[str]:
    return {tool.name for tool in model.calls[-1][1]}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_a_tool_switched_off_on_the_page_is_not_offered_next_turn(settings) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with (
        running_palui(settings, model, toolsets=[notes()]) as (app, chat),
        signed_in(app, chat) as web,
    ):
        await chat.send("hi")
        assert "fn__find_notes" in offered(model) and "fn__add_note" not in offered(model)
        page = await web.get("/ui/connectors")
        assert 'data-tool="fn__find_notes"' in page and "annotation" in page
        version = await app.store.tool_settings.version()

        answer = await web.post("/ui/connectors/tool", {"tool": "fn__find_notes", "on": "0"})
        where = "/ui/connectors?done=off#fn"
        assert answer.status == 303 and answer.headers["Location"] == where
        answer = await web.post("/ui/connectors/tool", {"tool": "fn__add_note", "on": "1"})
        assert await app.store.tool_settings.version() == version + 2
        saved = await app.store.tool_settings.all()
        assert not saved["fn__find_notes"].enabled and saved["fn__add_note"].enabled

        await chat.send("again")
        assert "fn__find_notes" not in offered(model) and "fn__add_note" in offered(model)
        # The chat's sheet shows what the page set: they are one set of switches.
        await chat.command("connectors")
        card = fn_card(chat)
        assert "find_notes  [off]" in card and "add_note  [on]" in card


async def test_pause_and_class_from_the_page_hold_in_the_chat(settings) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with (
        running_palui(settings, model, toolsets=[notes()]) as (app, chat),
        signed_in(app, chat) as web,
    ):
        await web.get("/ui/connectors")
        assert (await web.post("/ui/connectors/fn/pause", {"paused": "1"})).status == 303
        page = await web.get("/ui/connectors")
        assert "⏸ paused" in page and "▶️ Resume" in page
        await chat.send("hi")
        assert not any(name.startswith("fn__") for name in offered(model))
        await chat.command("connectors")
        assert "⏸ paused" in fn_card(chat)

        await web.post("/ui/connectors/fn/pause", {"paused": "0"})
        await web.post("/ui/connectors/tool", {"tool": "fn__find_notes", "class": "destructive"})
        saved = (await app.store.tool_settings.all())["fn__find_notes"]
        assert saved.tool_class == "destructive"
        page = await web.get("/ui/connectors")
        row = page[page.index('data-tool="fn__find_notes"') :]
        assert re.search(r'<select class="inline destructive"[^>]*>\s*<option>read', row)
        assert "<option selected>destructive</option>" in row.split("</tr>")[0]
        await chat.command("connectors")
        assert "destructive find_notes" in fn_card(chat)


async def test_a_change_without_the_csrf_token_or_for_an_unknown_tool_changes_nothing(
    settings,
) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with (
        running_palui(settings, model, toolsets=[notes()]) as (app, chat),
        signed_in(app, chat) as web,
    ):
        await web.get("/ui/connectors")
        version = await app.store.tool_settings.version()
        refused = await web.post(
            "/ui/connectors/tool", {"tool": "fn__find_notes", "on": "0"}, csrf=False
        )
        assert refused.status == 403
        forged = await web.post(
            "/ui/connectors/tool", {"tool": "fn__find_notes", "on": "0", "csrf": "forged"}
        )
        assert forged.status == 403
        missing = await web.post("/ui/connectors/tool", {"tool": "fn__nothing", "on": "0"})
        assert missing.status == 404
        assert (await web.post("/ui/connectors/nope/pause", {"paused": "1"})).status == 404
        assert await app.store.tool_settings.version() == version
        await chat.send("hi")
        assert "fn__find_notes" in offered(model)


async def test_in_chromium_a_tool_switched_off_is_not_offered_in_the_next_turn(
    settings: Settings,
    browser: Any,  # noqa: F811
    shots: Shots,  # noqa: F811
) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with running_palui(settings, model, toolsets=[NotesToolset()]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        await chat.send("hi")
        assert "mcp-notes__search_notes" in offered(model)
        await chat.command("web")
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto(link_in(chat))
        await follow(page, 'button:has-text("Sign in")')
        await follow(page, "nav >> text=Connectors")
        row = page.locator('tr[data-tool="mcp-notes__search_notes"]')
        assert "annotation" in await row.inner_text()
        switch = row.locator('button[aria-label="switch search_notes off"]')
        assert (await switch.inner_text()).strip() == "on"
        await follow(page, 'tr[data-tool="mcp-notes__search_notes"] button[aria-label$=" off"]')
        assert page.url.endswith("/ui/connectors?done=off#mcp-notes")
        assert await page.inner_text(".flash") == "Switched off."
        row = page.locator('tr[data-tool="mcp-notes__search_notes"]')
        assert (await row.locator("button.small.off").inner_text()).strip() == "off"
        await shots.shoot(page, "connectors")

        await chat.send("search my notes")
        assert "mcp-notes__search_notes" not in offered(model)
        assert "mcp-notes__list_notes" in offered(model)
        await context.close()
