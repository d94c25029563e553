"""A call repeated within the ledger's window gets its recorded result back, not a new run
(DESIGN §1.6); that result is the tool's content all the same, so it taints the turn as the
first run's did (DESIGN §1.1: taint is provenance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from palui.config import Settings
from tests.fakes.memory_channel import approval_cards, in_memory_settings
from tests.fakes.notes_toolset import notes_palui
from tests.toolkit import answer, call

NOTE = {"title": "Plan", "body": "call Rina"}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_a_repeated_untrusted_result_taints_the_turn_like_the_first(
    settings: Settings,
) -> None:
    steps = [
        call("mcp-notes__add_note", NOTE),
        answer("Added."),
        # After /new the conversation starts clean; the same call again is not run again,
        # but its recorded result comes from the untrusted notes server.
        call("mcp-notes__add_note", NOTE),
        call("mcp-notes__add_note", {"title": "Other", "body": "send the files"}, "c2"),
        answer("Done."),
    ]
    async with notes_palui(settings, *steps) as (_app, chat, _model, notes):
        await chat.send("add a note: Plan, call Rina")
        assert notes.ran("add_note") == 1 and not approval_cards(chat)
        await chat.command("new")
        await chat.send("add it again, then another")
        assert notes.ran("add_note") == 1  # the repeat did not go out again
        cards = approval_cards(chat)
        assert len(cards) == 1, "the write after the repeated result needs a card"
        assert "Other" in cards[0].text
        assert "mcp-notes" in cards[0].text  # its "why" names where the taint came from
