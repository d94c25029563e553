"""The notes server's tools in this process: the same names, marks, answers and id (`mcp-notes`,
untrusted), as a `FunctionToolset` over a dict, for in-process tests (tests/fakes/memory_channel.py)
that are about Palui's policy and pipeline rather than MCP over stdio."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from palui.config import Settings
from tests.fakes.memory_channel import MemoryChannel, running_palui, switch_on
from tests.toolkit import FunctionToolset, ScriptedModel, Step

NOTES_ID = "mcp-notes"
# What palui.toml's `enable` switches on for the notes server in tests/conftest.py's `with_notes`.
SWITCHED_ON = ("add_note", "delete_note")


class NotesToolset(FunctionToolset):
    """Notes as {id: {"title", "body"}}, starting with note 1, "Groceries" (as `notes_file`)."""

    def __init__(self, *, trust: str = "untrusted") -> None:
        self.notes: dict[str, dict[str, str]] = {"1": {"title": "Groceries", "body": "milk"}}
        super().__init__(
            NOTES_ID,
            {
                "list_notes": self.list_notes,
                "search_notes": self.search_notes,
                "add_note": self.add_note,
                "delete_note": self.delete_note,
                "slow_op": self.slow_op,
            },
            read_only=("list_notes", "search_notes", "slow_op"),
            destructive=("delete_note",),
            trust=trust,
        )

    async def list_notes(self) -> str:
        return "\n".join(f"{k}: {v['title']}" for k, v in self.notes.items()) or "no notes"

    async def search_notes(self, query: str) -> str:
        hits = [
            f"{k}: {v['title']}"
            for k, v in self.notes.items()
            if query.lower() in (v["title"] + " " + v["body"]).lower()
        ]
        return "\n".join(hits) or "no match"

    async def add_note(self, title: str, body: str, **_: object) -> str:
        note_id = str(max((int(k) for k in self.notes), default=0) + 1)
        self.notes[note_id] = {"title": title, "body": body}
        return f"added note {note_id}"

    async def delete_note(self, id: str, **_: object) -> str:
        if self.notes.pop(id, None) is None:
            raise ValueError(f"no note with id {id}")
        return f"deleted note {id}"

    async def slow_op(self, seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}s"

    def ran(self, tool: str) -> int:
        """How many times `tool` was called."""
        return sum(1 for name, _ in self.calls if name == tool)


@asynccontextmanager
async def notes_palui(
    settings: Settings, *steps: Step
) -> AsyncIterator[tuple[Any, MemoryChannel, ScriptedModel, NotesToolset]]:
    """Palui with the notes tools (untrusted; add and delete switched on, as `with_notes`)."""
    notes, model = NotesToolset(), ScriptedModel(steps)
    async with running_palui(settings, model, toolsets=[notes]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        yield app, chat, model, notes
