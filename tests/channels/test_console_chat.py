"""`palui chat` serves its own console chat only. On the daemon's database it never prints or
marks sent a Telegram chat's pending reply, never answers that chat's stored messages or
commands, and never runs or claims its jobs, webhook deliveries or paused turns: all of it stays
for the daemon."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from palui.app.console import CONSOLE_CHAT_ID
from palui.app.root import Palui
from palui.channels.console import ConsoleChannel
from palui.chat.stored_inbound import inbound_to_json
from palui.db import Database, Store
from palui.domain import ChatUser, Inbound
from palui.errors import ChannelError
from tests.fakes.memory_channel import in_memory_settings
from tests.toolkit import ScriptedModel, answer

TELEGRAM_CHAT = 1001
ANA = ChatUser(TELEGRAM_CHAT, "ana")


def lines(*typed: str) -> Callable[[str], str]:
    """What a person types at the console's prompts, then end of input."""
    queue: Iterator[str] = iter(typed)

    def read_line(prompt: str) -> str:
        try:
            return next(queue)
        except StopIteration:
            raise EOFError from None

    return read_line


async def stored(store: Store, update_id: int, text: str) -> None:
    inbound = Inbound(update_id=update_id, chat_id=TELEGRAM_CHAT, user=ANA, text=text)
    assert await store.inbox.add(update_id, TELEGRAM_CHAT, ANA.id, inbound_to_json(inbound))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Any:
    return in_memory_settings(database_url, str(tmp_path / "data"))


@pytest.fixture
async def daemons_work(settings: Any) -> dict[str, Any]:
    """What the daemon left for a Telegram chat: a reply to send, a message and a command to
    answer, a job run queued, a job whose run fell due while nothing ran, a webhook delivery."""
    db = Database(settings.resolved_database_url)
    store = Store(db)
    try:
        await store.outbox.add(TELEGRAM_CHAT, "A reply for Ana on Telegram.")
        await stored(store, 5, "hello from Telegram")
        await stored(store, 6, "/new")
        anchor = datetime.now(UTC) - timedelta(minutes=90)
        queued = await store.jobs.create(
            TELEGRAM_CHAT, "say hi", "every 2h", "UTC", 10_000, "ana", anchor
        )
        assert await store.jobs.claim_run(queued, anchor)
        due = await store.jobs.create(
            TELEGRAM_CHAT, "water the plants", "every 1h", "UTC", 10_000, "ana", anchor
        )
        delivery = await store.webhooks.add(
            "ci", TELEGRAM_CHAT, '{"build": "red"}', content_type="application/json",
            instructions="",
        )  # fmt: skip
        assert delivery is not None
        return {"queued": queued.id, "due": due.id}
    finally:
        await db.close()


async def test_palui_chat_leaves_another_chats_reply_messages_jobs_and_webhooks_alone(
    settings: Any, daemons_work: dict[str, Any]
) -> None:
    model = ScriptedModel([answer("Hi, console.")])
    out = io.StringIO()
    async with Palui(settings, model=model) as app:
        await app.chat_console(lines("hi"), out)
        store = app.store
        assert [o.text for o in await store.outbox.pending(TELEGRAM_CHAT)] == [
            "A reply for Ana on Telegram."
        ]
        waiting = await store.inbox.pending(TELEGRAM_CHAT)
        assert [item.update_id for item in waiting] == [5, 6]
        assert [run.job_id for run in await store.jobs.queued(TELEGRAM_CHAT)] == [
            daemons_work["queued"]
        ]
        assert await store.jobs.runs(daemons_work["due"]) == []  # its due run left unclaimed
        assert len(await store.webhooks.pending(TELEGRAM_CHAT)) == 1
        assert await store.outbox.pending(CONSOLE_CHAT_ID) == []
    text = out.getvalue()
    assert "Hi, console." in text
    assert "A reply for Ana" not in text
    assert len(model.calls) == 1
    assert model.calls[0][0][-1].content == "hi"


async def test_the_console_channel_refuses_to_print_another_chats_reply() -> None:
    out = io.StringIO()
    channel = ConsoleChannel(out, CONSOLE_CHAT_ID)
    with pytest.raises(ChannelError, match="not the console's"):
        await channel.send_part(TELEGRAM_CHAT, *channel.render("A reply for Ana on Telegram."))
    await channel.send_part(CONSOLE_CHAT_ID, *channel.render("Hi, console."))
    assert out.getvalue() == "\npalui> Hi, console.\n\n"
