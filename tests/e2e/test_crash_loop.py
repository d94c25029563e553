"""No crash loop (palui.chat.attempts): each attempt at a message is counted in its inbox row
before it runs, so a message whose handling killed the process twice gets an apology and is
marked done instead of killing every restart; a single interruption still runs again. The real
`palui run` killed with SIGKILL mid-turn, and the counter driven through the app."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from palui.chat.attempts import APOLOGY
from palui.chat.stored_inbound import inbound_to_json
from palui.config import Settings
from palui.domain import Attachment, AttachmentKind
from palui.errors import ChannelError
from tests import toolkit
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui
from tests.fakes.model_server import Script
from tests.toolkit import Daemon


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def _attempts(settings: Settings, chat_id: int) -> list[int]:
    """The pending updates' attempt counts, read by a process of its own (the app stopped)."""
    from palui.db import Database, Store

    db = Database(settings.resolved_database_url)
    try:
        return [item.attempts for item in await Store(db).inbox.pending(chat_id)]
    finally:
        await db.close()


async def _stored(settings: Settings, chat: MemoryChannel, text: str, attempts: int) -> int:
    """A message the inbox holds as a process that died `attempts` times in it left it."""
    from palui.db import Database, Store

    inbound = chat.inbound(text=text)
    db = Database(settings.resolved_database_url)
    await db.migrate()
    store = Store(db)
    try:
        await store.inbox.add(
            inbound.update_id, chat.chat_id, chat.user_id, inbound_to_json(inbound)
        )
        for _ in range(attempts):
            await store.inbox.count_attempt([inbound.update_id])
    finally:
        await db.close()
    return inbound.update_id


@pytest.mark.slow
async def test_a_message_killed_twice_gets_an_apology_not_a_third_run(
    daemon: Daemon,
    fake_telegram: Any,
    fake_model: Any,
) -> None:
    fake_model.queue(Script(hang=True), Script(hang=True), Script(text="next answer"))
    await daemon.start()
    update_id = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "the message that kills")
    await fake_telegram.wait_for_delivery(update_id, timeout=60)
    for attempt in (1, 2):
        await fake_model.wait_for_request(count=attempt, timeout=60)  # the turn is running
        await daemon.kill9()
        await daemon.start()

    [apology] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
    assert apology["text"] == APOLOGY
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello again")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=60)
    assert [m["text"] for m in replies] == [APOLOGY, "next answer"]
    # Two attempts at the first message, then one turn for the next: no third attempt.
    assert [r.last_user_text for r in fake_model.requests] == [
        "the message that kills", "the message that kills", "hello again"
    ]  # fmt: skip


async def test_a_message_attempted_twice_is_answered_with_an_apology(settings: Settings) -> None:
    chat = MemoryChannel()
    await _stored(settings, chat, "the message that kills", attempts=2)
    model = toolkit.ScriptedModel((toolkit.answer("next answer"),))
    async with running_palui(settings, model, chat) as (app, _):
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts() == [APOLOGY]
        assert await app.store.inbox.pending(chat.chat_id) == []  # done: never tried again
        await chat.send("hello again")
    assert chat.texts() == [APOLOGY, "next answer"]
    assert len(model.calls) == 1


async def test_a_message_interrupted_once_runs_again(settings: Settings) -> None:
    chat = MemoryChannel()
    await _stored(settings, chat, "interrupted once", attempts=1)
    model = toolkit.ScriptedModel((toolkit.answer("the answer"),))
    async with running_palui(settings, model, chat) as (app, _):
        await app.chats.wait_idle(chat.chat_id)
    assert chat.texts() == ["the answer"]


@dataclasses.dataclass
class _StuckFiles(MemoryChannel):
    """A channel whose download of a file never finishes: the file's reading is under way."""

    downloading: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    async def download(self, file_id: str, max_bytes: int) -> bytes:
        self.downloading.set()
        await asyncio.Event().wait()
        raise ChannelError("unreachable")


async def test_a_files_attempt_is_counted_before_it_is_read(settings: Settings) -> None:
    chat = _StuckFiles()
    document = Attachment(AttachmentKind.DOCUMENT, "d1", 5, "application/pdf", "report.pdf")
    async with running_palui(settings, toolkit.ScriptedModel(), chat) as (app, _):
        inbound = dataclasses.replace(chat.inbound(), attachment=document)
        await app.chats.accept(inbound)
        await chat.downloading.wait()
        [item] = await app.store.inbox.pending(chat.chat_id)
        assert item.attempts == 1  # a kill -9 now counts


async def test_a_turns_start_counts_its_attempt(settings: Settings) -> None:
    started = asyncio.Event()
    never = asyncio.Event()

    async def stuck(_messages: Any) -> toolkit.Completion:
        started.set()
        await never.wait()
        raise AssertionError("unreachable")

    chat = MemoryChannel()
    async with running_palui(settings, toolkit.ScriptedModel((stuck,)), chat) as (app, _):
        await app.chats.accept(chat.inbound(text="think hard"))
        await started.wait()
        [item] = await app.store.inbox.pending(chat.chat_id)
        assert item.attempts == 1


async def test_an_orderly_stop_mid_turn_is_no_failed_attempt(settings: Settings) -> None:
    started = asyncio.Event()

    async def stuck(_messages: Any) -> toolkit.Completion:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    chat = MemoryChannel()
    async with running_palui(settings, toolkit.ScriptedModel((stuck,)), chat) as (app, _):
        await app.chats.accept(chat.inbound(text="think hard"))
        await started.wait()
    assert await _attempts(settings, chat.chat_id) == [0]  # pending, to run afresh
