"""Compaction and auto-save run on time (DESIGN §1.7): a chat whose next message is already
waiting when each reply is committed — a person who answers at once, a busy group — is compacted
past `compact_after` before its next turn starts, not only once its queue runs dry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from palui.db.models import MemorySlice
from palui.domain import Completion, Message, Role
from tests.fakes.memory_channel import CHAT_ID, in_memory_settings, running_palui
from tests.toolkit import FunctionToolset, ScriptedModel, answer, seed_turns

SUMMARY = "SUMMARY: the person keeps numbered notes."
NOTE = re.compile(r"^note number (\d+) for the record$")
LAST = 24  # the person sends notes 21..24, each the moment the previous reply arrives


def note(number: int) -> str:
    return f"note number {number} for the record"


def is_summary_request(messages: list[Message]) -> bool:
    return bool(messages) and "running summary of a conversation" in messages[0].content


class EagerPerson:
    """The model's side of a chat where the person's next note is stored while the model is
    still answering the previous one: when each reply is committed, the queue is not empty."""

    def __init__(self) -> None:
        self.app: Any = None
        self.chat: Any = None

    async def __call__(self, messages: list[Message]) -> Completion:
        if is_summary_request(messages):
            return answer(SUMMARY)
        said = messages[-1].content
        found = NOTE.match(said)
        if found and int(found[1]) < LAST:
            following = self.chat.inbound(text=note(int(found[1]) + 1))
            assert await self.app.chats.accept(following)  # stored in the inbox, waiting
        return answer(f"ok: {said}")


def turn_request(model: ScriptedModel, text: str) -> int:
    return next(
        i
        for i, (messages, _) in enumerate(model.calls)
        if not is_summary_request(messages) and messages[-1].content == text
    )


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Any:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_a_busy_chat_is_compacted_before_its_next_turn(settings: Any) -> None:
    person = EagerPerson()
    model = ScriptedModel(forever=person)
    async with running_palui(settings, model) as (app, chat):
        person.app, person.chat = app, chat
        await seed_turns(app, 20, CHAT_ID)  # 40 messages: at compact_after, not past it
        await chat.send(note(21))  # 21..24 follow, each already waiting when a reply lands

        assert chat.texts() == [f"ok: {note(n)}" for n in range(21, LAST + 1)]
        summaries = [i for i, (m, _) in enumerate(model.calls) if is_summary_request(m)]
        assert len(summaries) == 1  # 42 messages after note 21: the older 12 summarised once
        # The summary was asked between the reply to note 21 and the turn for note 22.
        assert turn_request(model, note(21)) < summaries[0] < turn_request(model, note(22))
        transcript = model.calls[summaries[0]][0][-1].content
        assert note(6) in transcript and note(7) not in transcript

        messages, _ = model.calls[turn_request(model, note(22))]
        assert SUMMARY in messages[0].content
        said = [m.content for m in messages if m.role in (Role.USER, Role.ASSISTANT)]
        assert len(said) == 31  # the last 30 messages (notes 7..21) and note 22
        assert said[0] == note(7) and said[-1] == note(22)

        async with app.db.session() as s:
            slices = list(await s.scalars(select(MemorySlice)))
        assert [(x.reason, x.summarised, x.save_state) for x in slices] == [
            ("compaction", True, "off")  # recall is off here: nothing to save
        ]


async def test_a_busy_chat_auto_saves_the_compacted_slice_before_its_next_turn(
    settings: Any,
) -> None:
    saved: list[str] = []

    async def add_memory(content: str, source_id: str, tags: list[str]) -> str:
        saved.append(content)
        return "stored"

    recall = FunctionToolset("recall", {"add_memory": add_memory})
    person = EagerPerson()
    model = ScriptedModel(forever=person)
    async with running_palui(settings, model, toolsets=[recall]) as (app, chat):
        person.app, person.chat = app, chat
        save_before_next_turn: list[int] = []

        async def noting(messages: list[Message]) -> Completion:
            if not is_summary_request(messages) and messages[-1].content == note(22):
                save_before_next_turn.append(len(saved))
            return await person(messages)

        model.forever = noting
        await seed_turns(app, 20, CHAT_ID)
        await chat.send(note(21))

        assert save_before_next_turn == [6]  # notes 1..6, one memory per turn, already saved
        assert all("Person: note number" in content for content in saved)
