"""A primary model the key may not use never fails a turn while a fallback answers: the first
fallback that answers stands in for that turn, the chat is told once a day which one and why,
/status shows it and `palui doctor` names the model that refused."""

from __future__ import annotations

import io

import pytest

from palui.cli.doctor import run_doctor
from palui.db import Database
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script

BACKUP = "openai/backup"


def primary_says(status: int):
    def brain(request: ModelRequest) -> Script:
        if request.model == "fake-model":
            return Script(status=status, error="this key may not use fake-model")
        return Script(text=f"backup answers: {request.last_user_text}")

    return brain


def texts(fake_telegram) -> list[str]:
    return [str(m.get("text")) for m in fake_telegram.sent_messages(OWNER_CHAT)]


@pytest.mark.parametrize("status", [403, 404])
async def test_a_refused_primary_is_replaced_and_the_chat_is_told_once(
    start_palui, fake_telegram, fake_model, monkeypatch, status: int
) -> None:
    monkeypatch.setenv("PALUI_FALLBACK_MODELS", BACKUP)
    fake_model.brain = primary_says(status)
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "first")
    await fake_telegram.wait_for_text(OWNER_CHAT, "backup answers: first")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "second")
    await fake_telegram.wait_for_text(OWNER_CHAT, "backup answers: second")
    told = [t for t in texts(fake_telegram) if "is answering in place of" in t]
    assert len(told) == 1
    assert f"{BACKUP} is answering in place of openai/fake-model" in told[0]
    assert f"HTTP {status}" in told[0]

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    status_text = await fake_telegram.wait_for_text(OWNER_CHAT, "stood in today")
    assert "openai/fake-model refused" in str(status_text.get("text"))


async def test_a_transient_failure_keeps_todays_behaviour(
    start_palui, fake_telegram, fake_model, monkeypatch
) -> None:
    monkeypatch.setenv("PALUI_FALLBACK_MODELS", BACKUP)
    fake_model.brain = primary_says(500)
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    await fake_telegram.wait_for_text(OWNER_CHAT, "backup answers: hello")
    assert not [t for t in texts(fake_telegram) if "in place of" in t]
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    status_text = await fake_telegram.wait_for_text(OWNER_CHAT, "Tokens today")
    assert "stood in" not in str(status_text.get("text"))


async def test_doctor_names_the_model_that_refused(
    settings_env, fake_model, fake_telegram, monkeypatch
) -> None:
    monkeypatch.setenv("PALUI_FALLBACK_MODELS", BACKUP)
    fake_model.brain = primary_says(403)
    db = Database(settings_env["PALUI_DATABASE_URL"])
    await db.migrate()
    await db.close()
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    report = out.getvalue()
    assert "❌ model: openai/fake-model refused" in report
    assert f"{BACKUP} stands in for it" in report
    assert "fix: Set PALUI_MODEL to a model the API key may use" in report
