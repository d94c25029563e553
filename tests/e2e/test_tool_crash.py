"""`kill -9` of `palui run` while a world-changing call is out (its key stored, no result yet),
then a restart: the action is an unknown outcome, and the real MCP server executed it once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.toolkit import Daemon, palui_cli, wait_until

pytestmark = pytest.mark.slow


def _executions(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _make_notes_log_and_hang(log: Path) -> None:
    config = Path(os.environ["PALUI_CONFIG"])
    config.write_text(
        config.read_text().replace(
            "env = { ", f'env = {{ NOTES_LOG = {json.dumps(str(log))}, NOTES_HANG_ON = "add_note", '
        )
    )


async def _until_logged(log: Path) -> None:
    # The server appends to its own log as it starts executing; nothing else to await across
    # processes.
    await wait_until(lambda: _executions(log), timeout=60)


async def test_kill_9_mid_call_then_restart_shows_unknown_outcome_and_never_fires_again(
    with_notes,
    daemon: Daemon,
    fake_telegram,
    fake_model,
    tmp_path: Path,
) -> None:
    log = tmp_path / "executions.log"
    _make_notes_log_and_hang(log)

    def brain(request: ModelRequest) -> Script:
        results = [m["content"] for m in request.messages if m["role"] == "tool"]
        if not results:
            arguments = json.dumps({"title": "pay rent", "body": "1200 to the landlord"})
            return Script(tool_calls=[("mcp-notes__add_note", arguments)])
        return Script(text=f"Result: {results[-1]}")

    fake_model.brain = brain
    await daemon.start()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "note: pay rent")
    await _until_logged(log)  # the call went out; its key was stored before that
    await daemon.kill9()

    await daemon.start()  # the message is redelivered and its turn runs again
    reply = (await fake_telegram.wait_for_text(OWNER_CHAT, "It was not sent again", 60))["text"]
    assert "Unknown outcome" in reply
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 1
    assert len(_executions(log)) == 1  # the server's own log: executed once

    _, out = await palui_cli("runs", "--json")
    first, second = sorted(json.loads(out), key=lambda run: run["started_at"])
    _, out = await palui_cli("runs", "show", first["turn_id"], "--json")
    cut_off = [(s["stage"], s["outcome"]) for s in json.loads(out)["steps"]]
    assert cut_off == [("policy", "run"), ("ledger", "claimed"), ("execute", "unknown")]
    _, out = await palui_cli("runs", "show", second["turn_id"], "--json")
    again = [(s["stage"], s["outcome"]) for s in json.loads(out)["steps"]]
    assert again == [("policy", "run"), ("ledger", "unknown")]  # nothing went out again
