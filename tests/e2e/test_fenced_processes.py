"""Fencing with two real `palui run` processes on one PostgreSQL database (webhook mode): process
A runs a chat's turn with a slow write tool and is stopped with SIGSTOP past its lease's lapse;
B recovers the chat and answers; A is resumed with SIGCONT. The person gets exactly one answer,
the write happened at most once (the MCP server's own log), the history holds one reply, and
the recovered turn stays failed (A's late end is refused, not written over it)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from sqlalchemy import select

from palui.db import Database
from palui.db.models import MessageRow, Turn
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import needs_postgres, wait_until

pytestmark = pytest.mark.slow

ANSWER = "Noted."


def executions(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def until_logged(log: Path) -> None:
    # The server appends to its own log as the call starts; nothing else to await across
    # processes.
    await wait_until(lambda: executions(log), timeout=90)


def slow_add_note(log: Path, seconds: float) -> None:
    config = Path(os.environ["PALUI_CONFIG"])
    config.write_text(
        config.read_text().replace(
            "env = { ",
            f'env = {{ NOTES_LOG = {json.dumps(str(log))}, NOTES_SLOW_ON = "add_note:{seconds}", ',
        )
    )


async def test_a_process_stopped_past_its_lease_comes_back_and_neither_answers_nor_writes(
    database_url, with_notes, daemons, fake_telegram, fake_model, tmp_path: Path
) -> None:
    needs_postgres(database_url)
    log = tmp_path / "executions.log"
    slow_add_note(log, 4)

    def brain(request: ModelRequest) -> Script:
        if request.last_user_text == "thanks":
            return Script(text="You're welcome.")
        if not [m for m in request.messages if m["role"] == "tool"]:
            arguments = json.dumps({"title": "pay rent", "body": "1200 to the landlord"})
            return Script(tool_calls=[("mcp-notes__add_note", arguments)])
        return Script(text=ANSWER)

    fake_model.brain = brain
    a, b = daemons(), daemons()
    for daemon in (a, b):
        await daemon.start()
        await fake_telegram.wait_for_request(
            "setWebhook", lambda p, url=daemon.url: p["url"] == url, timeout=90
        )
    update = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "note: pay rent")
    assert await fake_telegram.deliver_to_webhook(update, url=a.url) == 200
    await until_logged(log)  # A's call went out (its ledger claim is stored)
    a.signal(signal.SIGSTOP)  # e.g. a long pause: A stops renewing its lease

    # B's sweep finds the chat orphaned once the lease has lapsed, takes it, recovers A's turn
    # and answers the message again; the write is an unknown outcome there, never re-fired.
    await fake_telegram.wait_for_text(OWNER_CHAT, ANSWER, timeout=90)
    a.signal(signal.SIGCONT)
    await a.wait_for_log("chat_lease_lost")  # A found its lease taken over, and stopped

    # One more round trip (through A) proves nothing else is queued: still one answer.
    thanks = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "thanks")
    assert await fake_telegram.deliver_to_webhook(thanks, url=a.url) == 200
    await fake_telegram.wait_for_text(OWNER_CHAT, "You're welcome.", timeout=60)
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts == [ANSWER, "You're welcome."]
    assert len(executions(log)) == 1  # the MCP server's own log: executed once

    db = Database(database_url)
    try:
        async with db.session() as s:
            statuses = list(await s.scalars(select(Turn.status).order_by(Turn.started_at)))
            replies = list(
                await s.scalars(
                    select(MessageRow.content)
                    .where(MessageRow.role == "assistant")
                    .order_by(MessageRow.id)
                )
            )
    finally:
        await db.close()
    assert statuses == ["failed", "done", "done"]  # A's turn as B recovered it
    assert replies == [ANSWER, "You're welcome."]
