"""The database is the truth for every switch: a tool switched off, a class set or a connector
paused on one Palui's /connectors card, and a memory switch, apply in another Palui on the same
database from its next turn — and a paused connector's tool is refused at call time there too.

Two apps in this process on one database, each with its own catalog, registry, toolsets, model
and channel (nothing shared in memory): the cheapest honest form of two processes."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from palui.config import Settings
from palui.db import Database, Store
from palui.domain import Card, Message, ToolSettingRecord
from palui.memory.recall import WARM_UP_QUERY
from tests import toolkit
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui, switch_on
from tests.fakes.notes_toolset import NOTES_ID, NotesToolset
from tests.toolkit import buttons as keyboard
from tests.toolkit import needs_postgres, start_in_webhook_mode


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


@dataclass
class Side:
    app: Any
    chat: MemoryChannel
    model: toolkit.ScriptedModel
    notes: NotesToolset
    recall: toolkit.FunctionToolset

    def recalled(self) -> int:
        """Recall questions asked for turns (the start-up's warm-up question is not one)."""
        return sum(
            1
            for name, arguments in self.recall.calls
            if name == "get_profile" and arguments.get("query") != WARM_UP_QUERY
        )

    def offered(self, turn: int = -1) -> set[str]:
        return {spec.name for spec in self.model.calls[turn][1]}

    def sheet(self, starts: str) -> tuple[int, Card]:
        """The /connectors card whose text starts so, as last drawn (sent, then edited)."""
        sent = next(c for c in reversed(self.chat.sent_cards) if c.card.text.startswith(starts))
        edits = [card for _, mid, card in self.chat.edits if mid == sent.message_id]
        return sent.message_id, (edits[-1] if edits else sent.card)

    async def tap(self, starts: str, label: str) -> Card:
        """Tap a button on that card; the card as redrawn."""
        message_id, card = self.sheet(starts)
        data = {b.label: b.data for row in card.keyboard for b in row}[label]
        await self.chat.tap(data, message_id=message_id)
        return self.redrawn(message_id)

    def redrawn(self, message_id: int) -> Card:
        return next(card for _, mid, card in reversed(self.chat.edits) if mid == message_id)


def recall_toolset() -> toolkit.FunctionToolset:
    async def get_profile(**_: object) -> str:
        return "The person likes tea."

    return toolkit.FunctionToolset(
        "recall", {"get_profile": get_profile}, read_only=("get_profile",)
    )


@asynccontextmanager
async def two_paluis(
    settings: Settings, *b_steps: toolkit.Step
) -> AsyncIterator[tuple[Side, Side]]:
    """Palui A (where the person taps) and Palui B (which runs the next turns), one database."""
    async with AsyncExitStack() as stack:
        sides = []
        for name, steps, first_id in (("A", (), 1), ("B", b_steps, 500_000)):
            notes, recall = NotesToolset(), recall_toolset()
            model = toolkit.ScriptedModel(steps, forever=toolkit.answer(f"ok from {name}"))
            # Update ids are unique in the shared inbox: B's must not be A's.
            chat = MemoryChannel(_ids=itertools.count(first_id))
            app, chat = await stack.enter_async_context(
                running_palui(settings, model, chat, toolsets=[notes, recall])
            )
            sides.append(Side(app, chat, model, notes, recall))
        a, b = sides
        for part in ("db", "catalog", "registry", "switchboard", "store"):
            assert getattr(a.app, part) is not getattr(b.app, part), part
        yield a, b


def tool_results(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


async def test_a_tool_switched_off_on_a_is_not_offered_in_the_next_turn_b_runs(
    settings: Settings,
) -> None:
    async with two_paluis(settings) as (a, b):
        await b.chat.send("what notes do I have")
        assert "mcp-notes__list_notes" in b.offered()
        await a.chat.command("connectors")
        card = await a.tap("notes", "✅ list_notes")
        assert "list_notes  [off]" in card.text

        await b.chat.send("what notes do I have now")
        assert "mcp-notes__list_notes" not in b.offered()
        assert "mcp-notes__search_notes" in b.offered()


async def test_a_class_set_to_destructive_on_a_makes_b_ask_for_that_tool(
    settings: Settings,
) -> None:
    steps = (
        toolkit.call("mcp-notes__add_note", {"title": "a", "body": "b"}),
        toolkit.answer("asked first"),
    )
    async with two_paluis(settings, *steps) as (a, b):
        await switch_on(a.app, NOTES_ID, "add_note")  # through A's store and catalog only
        await a.chat.command("connectors")
        await a.tap("notes", "Change a class…")
        await a.tap("notes", "add_note")
        card = await a.tap("notes", "destructive")
        assert "destructive add_note  [on]  (class from: you)" in card.text

        await b.chat.send("add a note")
        assert "mcp-notes__add_note" in b.offered(0)
        cards = [c for c in b.chat.cards if "Approval needed" in c.text]
        assert cards and "mcp-notes__add_note  (destructive)" in cards[0].text
        assert b.notes.ran("add_note") == 0 and a.notes.ran("add_note") == 0


async def test_a_connector_paused_on_a_is_refused_at_call_time_and_not_offered_by_b(
    settings: Settings,
) -> None:
    async def pause_on_a_then_call(messages: list[Message]) -> Any:
        # B offered the notes tools at the turn's start; A pauses them before the call goes out.
        await a.tap("notes", "⏸ Pause")
        return toolkit.call("mcp-notes__list_notes")

    async with two_paluis(settings, pause_on_a_then_call, toolkit.answer("paused")) as (a, b):
        await a.chat.command("connectors")
        await b.chat.send("what notes do I have")
        assert "⏸ paused" in a.sheet("notes")[1].text
        assert "mcp-notes__list_notes" in b.offered(0)
        assert b.notes.ran("list_notes") == 0 and a.notes.ran("list_notes") == 0
        (result,) = tool_results(b.model.calls[1][0])
        assert "was not run" in result and "paused" in result

        await b.chat.send("and now?")
        assert not [name for name in b.offered() if name.startswith("mcp-notes__")]


async def test_a_tool_switched_off_on_a_mid_turn_is_refused_by_b_when_called(
    settings: Settings,
) -> None:
    async def switch_off_on_a_then_call(messages: list[Message]) -> Any:
        await a.tap("notes", "✅ list_notes")
        return toolkit.call("mcp-notes__list_notes")

    async with two_paluis(settings, switch_off_on_a_then_call, toolkit.answer("off")) as (a, b):
        await a.chat.command("connectors")
        await b.chat.send("what notes do I have")
        assert b.notes.ran("list_notes") == 0
        (result,) = tool_results(b.model.calls[1][0])
        assert "was not run: it is switched off" in result


async def test_auto_recall_switched_off_on_a_is_obeyed_by_b(settings: Settings) -> None:
    async with two_paluis(settings) as (a, b):
        await b.chat.send("what do I like to drink")
        assert b.recalled() == 1
        await a.chat.command("connectors")
        card = await a.tap("recall", "✅ Auto-recall")
        assert "Auto-recall: off" in card.text

        await b.chat.send("what do I like to drink again")
        assert b.recalled() == 1  # not asked again
        assert "The person likes tea." not in str(b.model.calls[-1][0][0].content)


async def test_a_turn_with_no_switch_change_does_not_reload_the_switches(
    settings: Settings,
) -> None:
    async with two_paluis(settings) as (a, b):
        board = b.app.switchboard
        await b.chat.send("hello there my friend")
        loads, checks = board.loads, board.checks
        await b.chat.send("hello again my friend")
        await b.chat.send("and once more my friend")
        assert board.loads == loads  # no reload
        # The chat worker's look reads the version along (palui.db.queues): no lookup of its own.
        assert board.checks == checks

        await a.chat.command("connectors")
        await a.tap("notes", "✅ list_notes")
        await b.chat.send("hello after the tap")
        assert board.loads == loads + 1


async def test_every_switch_write_moves_the_settings_version(database_url: str) -> None:
    db = Database(database_url)
    store = Store(db)
    try:
        repo = store.tool_settings
        start = await repo.version()
        await store.tool_settings.set_paused("mcp-notes", True)
        assert await repo.version() == start + 1
        await repo.save(ToolSettingRecord("mcp-notes__list_notes", False, None, None, False))
        assert await repo.version() == start + 2
        await store.memory.set_switch("recall", "auto_recall", False)
        assert await repo.version() == start + 3
    finally:
        await db.close()


# -- two full daemons in webhook mode on one PostgreSQL database ------------------------------


async def test_two_daemons_a_tap_on_one_switches_the_tool_off_for_the_other(
    database_url, with_notes, mcp_in_process, start_palui, fake_telegram, fake_model
) -> None:
    needs_postgres(database_url)
    fake_model.reply("ok")
    _, url_a = await start_in_webhook_mode(start_palui, fake_telegram)
    _, url_b = await start_in_webhook_mode(start_palui, fake_telegram)

    async def say_to(url: str, text: str, replies: int) -> None:
        update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, text)
        assert await fake_telegram.deliver_to_webhook(update, url=url) == 200
        await fake_telegram.wait_for_messages(OWNER_CHAT, replies)

    await say_to(url_b, "what notes do I have", 1)
    assert "mcp-notes__list_notes" in fake_model.requests[-1].tool_names

    before = len(fake_telegram.sent_messages(OWNER_CHAT))
    await say_to(url_a, "/connectors", before + 1)
    card = next(m for m in fake_telegram.sent_messages(OWNER_CHAT) if m["text"].startswith("notes"))
    data = keyboard(card)["✅ list_notes"]
    update = fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], data)
    assert await fake_telegram.deliver_to_webhook(update, url=url_a) == 200
    await fake_telegram.wait_for_request(
        "answerCallbackQuery", predicate=lambda p: "list_notes is off" in str(p.get("text"))
    )

    requests = len(fake_model.requests)
    update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and now?")
    assert await fake_telegram.deliver_to_webhook(update, url=url_b) == 200
    await fake_model.wait_for_request(requests + 1)
    assert "mcp-notes__list_notes" not in fake_model.requests[-1].tool_names
    assert "mcp-notes__search_notes" in fake_model.requests[-1].tool_names


async def test_status_on_b_shows_a_connector_paused_on_a(settings: Settings) -> None:
    async with two_paluis(settings) as (a, b):
        await a.chat.command("connectors")
        await a.tap("notes", "⏸ Pause")
        await b.chat.command("status")
        assert "⏸ notes — paused" in b.chat.texts()[-1]
