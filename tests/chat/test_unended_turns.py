"""No retry loop for a turn whose end fails (palui.chat.attempts): a webhook delivery whose
summarising turn fails to end is attempted at most twice — each attempt counted in its row as
the turn claims it — then marked handled with one note to its chat, never summarised again; the
chat goes on. A job's run is started once (its row moves from queued to started), so a run whose
end fails is not run again either. The real Palui against the fake Bot API and the fake model;
the fault is put in the store's turn end (the seam a test uses: `app.store`), only for the
turns of the delivery or the run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from palui.chat.attempts import MAX_ATTEMPTS, webhook_note
from palui.domain.turn_record import TurnEnd
from tests.conftest import OWNER_CHAT, OWNER_ID
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


def _ends_fail_for(
    monkeypatch: pytest.MonkeyPatch, app: Any, delivery_id: int | None = None
) -> list[str]:
    """The seam: the end of every turn summarising `delivery_id` (None: of every job's run)
    raises a statement error (the turn stays running; the worker fails and looks again). The
    turns it failed, in order."""
    finish, failed = app.store.turns.finish, []

    async def doomed(turn_id: str) -> bool:
        if delivery_id is None:
            return await app.store.jobs.job_of_turn(turn_id) is not None
        delivery = await app.store.webhooks.get(delivery_id)
        return delivery is not None and delivery.turn_id == turn_id

    async def failing(end: TurnEnd, *more: Any, **named: Any) -> Any:
        if await doomed(end.turn_id):
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


async def test_a_job_run_whose_end_fails_is_not_run_again(
    start_palui: Any, fake_telegram: Any, fake_model: Any, monkeypatch: Any
) -> None:
    fake_model.reply("done.")
    palui = await start_palui()
    app = palui.app
    failed = _ends_fail_for(monkeypatch, app)
    now = datetime.now(UTC).replace(microsecond=0)
    job = await app.store.jobs.create(
        OWNER_CHAT, "check the build", "every 1h", "UTC", 10**6, "t", now
    )
    assert await app.store.jobs.claim_run(job, now)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")  # the worker runs the run first

    await fake_telegram.wait_for_text(OWNER_CHAT, "done.")  # the message's answer, after it
    assert len(failed) == 1
    assert [r.last_user_text for r in fake_model.requests][1:] == ["hello"]
    [run] = await app.store.jobs.runs(job.id)
    assert (run.status, run.turn_status) == ("started", "failed")
