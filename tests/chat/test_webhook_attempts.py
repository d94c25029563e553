"""No summary loop (palui.chat.attempts): a webhook delivery whose summarising turn fails to end
is attempted at most twice — each attempt counted in its row as the turn claims it — then
marked handled with one note to its chat, never summarised again; the chat goes on. A job's
run is started once (its row moves from queued to started), so a run whose end fails is not
run again either. The real Palui against the fake Bot API and the fake model; the fault is put
in the store's turn end (the seam a test uses: `app.store`), only for that delivery's turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from palui.chat.attempts import MAX_ATTEMPTS, webhook_note
from palui.domain.turn_record import TurnEnd
from tests.conftest import OWNER_CHAT
from tests.toolkit import GITHUB_SECRET as SECRET
from tests.toolkit import post_json as post
from tests.toolkit import started

ENV = "GITHUB_HOOK_SECRET"
HEADERS = {"X-Palui-Secret": SECRET, "Content-Type": "text/plain"}


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "palui.toml"
    config.write_text(f'[webhooks.github]\nchat_id = {OWNER_CHAT}\nsecret_env = "{ENV}"\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    monkeypatch.setenv(ENV, SECRET)
    return config


def _ends_fail_for(monkeypatch: pytest.MonkeyPatch, app: Any, delivery_id: int) -> list[str]:
    """The seam: the end of every turn summarising `delivery_id` raises a statement error (the
    turn stays running; the worker fails and looks again). The turns it failed, in order."""
    finish, failed = app.store.turns.finish, []

    async def failing(end: TurnEnd, *more: Any, **named: Any) -> Any:
        delivery = await app.store.webhooks.get(delivery_id)
        if delivery is not None and delivery.turn_id == end.turn_id:
            failed.append(end.turn_id)
            raise OperationalError("UPDATE turns", {}, Exception("statement failed"))
        return await finish(end, *more, **named)

    monkeypatch.setattr(app.store.turns, "finish", failing)
    return failed


async def test_a_webhook_summary_whose_end_keeps_failing_is_given_up_with_one_note(
    hook: Path, start_palui: Any, fake_telegram: Any, fake_model: Any, monkeypatch: Any
) -> None:
    fake_model.reply("build 12 failed.")
    app, base = await started(start_palui, fake_telegram)
    url = f"{base}/webhooks/github"
    # Stored before the fault is in place would race its summary: the fault names the
    # delivery's id, which the first delivery of a fresh database gets.
    failed = _ends_fail_for(monkeypatch, app, 1)
    status, body = await post(url, b"build 12", HEADERS)
    assert (status, body["delivery_id"]) == (202, 1)

    [note] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
    assert note["text"] == webhook_note("github")
    assert len(failed) == MAX_ATTEMPTS
    assert len(fake_model.requests) == MAX_ATTEMPTS  # the model was asked once per attempt
    delivery = await app.store.webhooks.get(1)
    assert delivery is not None and delivery.attempts == MAX_ATTEMPTS

    # The chat goes on: the next delivery is summarised, and the given-up one never again.
    status, _ = await post(url, b"build 13", HEADERS)
    assert status == 202
    texts = [m["text"] for m in await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=60)]
    assert texts == [webhook_note("github"), "📨 Webhook github\nbuild 12 failed."]
    assert len(fake_model.requests) == MAX_ATTEMPTS + 1
    assert "build 13" in fake_model.requests[-1].messages[-1]["content"]
