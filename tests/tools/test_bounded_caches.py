"""Memory stays flat: no per-chat or per-tool cache grows without bound (issue 14).

The catalog keeps one entry per tool name (its latest definition) and at most CACHE_SIZE names;
a chat whose worker ended keeps no worker entry; a chat whose replies went out keeps no lock."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from palui.config import Settings
from palui.domain import RemoteTool
from palui.tools import catalog as catalog_module
from palui.tools.catalog import ToolCatalog
from tests import toolkit
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui


def tool(name: str, description: str) -> RemoteTool:
    return RemoteTool(name=name, description=description, input_schema={"type": "object"})


def test_a_tool_whose_definition_keeps_changing_keeps_one_catalog_entry() -> None:
    catalog = ToolCatalog(None, {}, {})
    for version in range(500):
        entry = catalog.entry("mcp-web", tool("fetch", f"Fetch a page (v{version})."))
        assert entry.remote.description == f"Fetch a page (v{version})."
    assert catalog.cached == 1


def test_the_catalog_keeps_at_most_its_cache_size_of_tool_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(catalog_module, "CACHE_SIZE", 16)
    catalog = ToolCatalog(None, {}, {})
    for n in range(100):
        catalog.entry("mcp-many", tool(f"tool_{n}", "Reads a thing."))
    assert catalog.cached == 16
    # The latest are kept; an evicted one is simply classified again when it comes back.
    again = catalog.entry("mcp-many", tool("tool_0", "Reads a thing."))
    assert again.name == "mcp-many__tool_0" and catalog.cached == 16


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(
        database_url, str(tmp_path / "data"), allowed_users=frozenset(range(1, 41))
    )


async def test_chats_that_went_quiet_keep_no_worker_entry_nor_outbox_lock(
    settings: Settings,
) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("Hello."))
    chat = MemoryChannel()
    async with running_palui(settings, model, chat) as (app, _):
        for user in range(1, 41):
            said = dataclasses.replace(chat.inbound(text="hi there", user_id=user), chat_id=user)
            await chat.push(said)
        assert len(chat.parts) == 40  # every chat was answered
        for user in range(1, 41):
            await app.chats.wait_idle(user)
        workers = app.chats._workers  # the seam: the map of per-chat workers
        outbox = app.chats._outbox
        # Idle, each worker still keeps its lease through the idle grace: wait for its end.
        await asyncio.gather(*(t for u in range(1, 41) if (t := workers.task(u)) is not None))
        assert len(workers) == 0
        assert outbox._locks == {}
