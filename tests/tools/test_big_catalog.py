"""A big catalog through the app: what /status and /connectors say, a search's find surviving
an approval pause and a restart, and the turn's record of what it was offered and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from palui.config import Settings
from palui.db.riders import Riders
from palui.domain import OfferEvent, OfferReason, TurnStatus
from palui.domain.turn_record import TurnEnd, TurnStart
from palui.web.viewer import Viewer
from tests import toolkit
from tests.catalog import CatalogToolset, catalog_toolsets
from tests.fakes.memory_channel import (
    approval_cards,
    approve,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.web_console import console_with_viewer, web_deps

FIND = "palui__find_tools"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def word() -> CatalogToolset:
    (toolset,) = catalog_toolsets(("word",))
    return toolset


async def switch_all_on(app, toolset: CatalogToolset) -> None:
    await switch_on(app, toolset.id, *(tool.name for tool in toolset.tools()))


async def test_status_and_connectors_say_how_many_tools_are_enabled_and_offered(
    settings: Settings,
) -> None:
    toolset = word()
    async with running_palui(settings, toolkit.ScriptedModel(), toolsets=[toolset]) as (app, chat):
        await chat.command("status")
        # Until switched on, only the read tools (and the built-ins that are on) are enabled.
        assert "all offered to each turn (limit 30)" in chat.texts()[-1]
        await switch_all_on(app, toolset)
        await chat.command("status")
        status = chat.texts()[-1]
        assert "Tools: 5" in status  # 54 of Word's and the built-ins switched on
        assert "enabled, 30 offered to each turn (limit 30)" in status
        assert "the model can search the rest" in status
        await chat.command("connectors")
        assert "30 offered to each turn" in chat.notices[-1][1]


async def test_a_found_tool_is_offered_again_after_an_approval_pause_and_a_restart(
    settings: Settings,
) -> None:
    toolset = word()
    steps = [
        toolkit.call(FIND, {"query": "delete a footnote"}),
        toolkit.call("word__delete_footnote_from_document", {"filename": "a.docx"}, "c2"),
    ]
    model = toolkit.ScriptedModel(steps)
    async with running_palui(settings, model, toolsets=[toolset]) as (app, chat):
        await switch_all_on(app, toolset)
        await chat.send("hello")
        (card,) = approval_cards(chat)  # destructive: a card, the turn pauses
        first = {spec.name for spec in model.calls[0][1]}
        assert "word__delete_footnote_from_document" not in first
        assert "word__delete_footnote_from_document" in {s.name for s in model.calls[1][1]}
        turn_id = (await app.store.turn_listing.listing([chat.chat_id], limit=1))[0].turn_id
    # A new process takes the tap: the resumed turn is offered what it had found.
    later = toolkit.ScriptedModel([toolkit.answer("footnote deleted")])
    async with running_palui(settings, later, chat, toolsets=[toolset]) as (app, chat):
        await chat.tap(approve(card))
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "footnote deleted"
        assert toolset.calls == ["delete_footnote_from_document"]
        resumed = {spec.name for spec in later.calls[0][1]}
        assert {"word__delete_footnote_from_document", FIND} <= resumed
        assert len(resumed) <= 30
        offered = await app.store.turn_listing.offered(turn_id)
    why = {o.tool: o.why for o in offered}
    assert why["word__delete_footnote_from_document"] == OfferReason.FOUND
    assert why[FIND] == OfferReason.BUILTIN
    assert {o.enabled for o in offered} == {54 + 5}  # Word's and palui's own five (delegate too)


async def test_the_turn_page_shows_which_tools_were_offered_and_why(store) -> None:
    chat_id = 1001
    await store.inbox.add(1, chat_id, chat_id, {"text": "show my github issue"})
    session_id = await store.chats.current_session(chat_id)
    await store.turns.start(
        TurnStart("t1", chat_id, [(1, "show my github issue")], session_id=session_id)
    )
    riders = Riders()
    riders.offered("t1", [
        OfferEvent("github__get_issue", OfferReason.RANKED, "score 7.10", 312),
        OfferEvent("github__list_issues", OfferReason.NAMED, "score 3.20", 312),
        OfferEvent("jira__jira_get_issue", OfferReason.FOUND, "search: jira ticket", 312),
    ])  # fmt: skip
    await store.turns.finish(TurnEnd("t1", TurnStatus.DONE, [1], reply="ok"), riders)
    from aiohttp.test_utils import TestClient, TestServer

    deps = web_deps(store, allowed_users=frozenset({chat_id}))
    app = console_with_viewer(deps, Viewer(chat_id, frozenset({chat_id}), "csrf", "@ana"))
    async with TestClient(TestServer(app)) as client:
        page = await (await client.get("/ui/turns/t1")).text()
    assert "3 offered of 312 enabled" in page
    assert "the rest were left out of the budget" in page
    for tool, why in (("github__get_issue", "ranked"), ("github__list_issues", "connector named"),
                      ("jira__jira_get_issue", "found by search")):  # fmt: skip
        assert tool in page and why in page
    assert "search: jira ticket" in page
