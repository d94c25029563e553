"""A call whose arguments are not valid JSON is settled before the policy (the model is told,
the turn goes on), and a failure while pausing a turn ends the turn with a message: the chat's
worker lives on and the next message is answered. Nothing is left `running`."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from palui.config import Settings
from palui.db import Database, Store
from palui.db.approvals import ApprovalRepo
from palui.db.models import Turn
from palui.domain import Message, TurnStatus
from palui.turns.ending import PAUSE_FAILED
from tests import toolkit
from tests.fakes.memory_channel import in_memory_settings, running_palui, switch_on
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def tool_results(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


async def statuses(app) -> list[str]:
    async with app.db.session() as s:
        return [str(status) for status in await s.scalars(select(Turn.status))]


async def test_malformed_arguments_on_a_destructive_call_get_an_answer_and_the_chat_goes_on(
    settings: Settings,
) -> None:
    steps = (
        toolkit.call("mcp-notes__delete_note", '{"id": "1"'),
        toolkit.answer("Sorry, I sent that wrong."),
        toolkit.answer("Hello again."),
    )
    model, notes = toolkit.ScriptedModel(steps), NotesToolset()
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        await chat.send("delete note 1")
        assert chat.texts() == ["Sorry, I sent that wrong."]
        assert not chat.cards and notes.ran("delete_note") == 0
        (result,) = tool_results(model.calls[1][0])
        assert "the arguments were not valid JSON" in result
        await chat.send("hi")
        assert chat.texts()[-1] == "Hello again."
        assert TurnStatus.RUNNING not in await statuses(app)


class RefusingPauses(ApprovalRepo):
    """The approvals of a database that fails as a turn's pause is stored."""

    async def pause_turn(self, *_: object, **__: object) -> None:
        raise RuntimeError("the card could not be made")


async def test_a_failure_while_pausing_ends_the_turn_with_a_message(settings: Settings) -> None:
    store = Store(Database(settings.resolved_database_url))
    store.approvals = RefusingPauses(store.db)
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1"}), toolkit.answer("Hello again."))
    model, notes = toolkit.ScriptedModel(steps), NotesToolset()
    async with running_palui(settings, model, toolsets=[notes], store=store) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        await chat.send("delete note 1")
        assert chat.texts() == [PAUSE_FAILED]
        assert notes.ran("delete_note") == 0
        assert await statuses(app) == [TurnStatus.FAILED]
        await chat.send("hi")
        assert chat.texts()[-1] == "Hello again."
        assert TurnStatus.RUNNING not in await statuses(app)
