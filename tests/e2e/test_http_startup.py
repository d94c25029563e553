"""Telegram webhook mode, the start-up checks of the HTTP server, and deliveries across a crash."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from palui.cli.main import main
from palui.db.models import InboxUpdate
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script

TG_SECRET = "tg-webhook-secret-0123456789"
HOOK_SECRET = "whsec-0123456789abcdef-ci"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- Telegram webhook mode -------------------------------------------------------------------------


async def test_telegram_webhook_mode_takes_each_update_once_and_refuses_a_wrong_secret(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue("first answer", "second answer")
    port = free_port()
    palui = await start_palui(
        PALUI_HTTP_PORT=str(port),
        PALUI_TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram",
        PALUI_TELEGRAM_WEBHOOK_SECRET=TG_SECRET,
    )
    set_webhook = await fake_telegram.wait_for_request("setWebhook")
    assert set_webhook.params["secret_token"] == TG_SECRET
    assert not [r for r in fake_telegram.requests if r.method.lower() == "getupdates"]

    stranger_try = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "sneaky")
    assert await fake_telegram.deliver_to_webhook(stranger_try, secret_token="wrong") == 401
    assert await fake_telegram.deliver_to_webhook(stranger_try, secret_token=None) == 401
    async with palui.app.db.session() as s:
        assert await s.get(InboxUpdate, stranger_try) is None  # refused before anything is stored

    update_id = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello over a webhook")
    assert await fake_telegram.deliver_to_webhook(update_id) == 200
    async with palui.app.db.session() as s:
        assert await s.get(InboxUpdate, update_id) is not None  # stored before the 200
    [reply] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"] == "first answer"

    # Telegram delivers again when it missed the 200: answered, but not handled twice.
    assert await fake_telegram.deliver_to_webhook(update_id) == 200
    later = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and another")
    assert await fake_telegram.deliver_to_webhook(later) == 200
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert [m["text"] for m in replies] == ["first answer", "second answer"]
    assert len(fake_model.requests) == 2
    users = [m["content"] for m in fake_model.requests[1].messages if m["role"] == "user"]
    assert users == ["hello over a webhook", "and another"]


async def test_a_malformed_telegram_update_is_refused(start_palui, fake_telegram) -> None:
    port = free_port()
    await start_palui(
        PALUI_HTTP_PORT=str(port),
        PALUI_TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram",
        PALUI_TELEGRAM_WEBHOOK_SECRET=TG_SECRET,
    )
    await fake_telegram.wait_for_request("setMyCommands")
    update_id = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "x")
    assert await fake_telegram.deliver_to_webhook(update_id, body=b"[1, 2]") == 400
    assert await fake_telegram.deliver_to_webhook(update_id, body=b"{nope") == 400


# -- start-up checks -----------------------------------------------------------------------------


@pytest.fixture
def run_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Enough settings for `palui run` to get as far as its HTTP checks (nothing is reachable)."""
    monkeypatch.setenv("PALUI_TELEGRAM_TOKEN", "123:abc")
    monkeypatch.setenv("PALUI_ALLOWED_USERS", "1")
    monkeypatch.setenv("PALUI_MODEL", "openai/none")
    monkeypatch.setenv("PALUI_DATA_DIR", str(tmp_path / "data"))
    config = tmp_path / "palui.toml"
    config.write_text('[webhooks.ci]\nchat_id = 5\nsecret_env = "CI_HOOK_SECRET"\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    return config


def test_a_webhook_whose_secret_is_not_set_stops_the_start(run_env, capsys) -> None:
    assert main(["run"]) == 2
    error = capsys.readouterr().err
    assert "[webhooks.ci] secret_env" in error
    assert "CI_HOOK_SECRET is not set" in error
    assert not (run_env.parent / "data").exists()  # refused before the database was touched


def test_binding_beyond_loopback_with_a_short_secret_is_refused(
    run_env, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("CI_HOOK_SECRET", "short1")
    monkeypatch.setenv("PALUI_HTTP_HOST", "0.0.0.0")
    assert main(["run"]) == 2
    error = capsys.readouterr().err
    assert "[webhooks.ci] secret_env" in error and "at least 16" in error
    assert "short1" not in error


def test_telegram_webhook_mode_without_its_secret_is_refused(run_env, capsys, monkeypatch) -> None:
    monkeypatch.setenv("CI_HOOK_SECRET", HOOK_SECRET)
    monkeypatch.setenv("PALUI_HTTP_HOST", "0.0.0.0")
    monkeypatch.setenv("PALUI_TELEGRAM_WEBHOOK_URL", "https://bot.example/telegram")
    assert main(["run"]) == 2
    assert "PALUI_TELEGRAM_WEBHOOK_SECRET is not set" in capsys.readouterr().err


def test_a_webhook_section_with_a_mistake_names_the_key(run_env, capsys) -> None:
    run_env.write_text('[webhooks.ci]\nsecret_env = "CI_HOOK_SECRET"\n')
    assert main(["run"]) == 2
    error = capsys.readouterr().err
    assert "[webhooks.ci] chat_id" in error and str(run_env) in error


# -- a delivery stored when the process dies ------------------------------------------------------


@pytest.fixture
async def daemon_env(
    settings_env: dict[str, str], tmp_path: Path
) -> AsyncIterator[tuple[dict[str, str], str]]:
    config = tmp_path / "palui.toml"
    config.write_text(f'[webhooks.ci]\nchat_id = {OWNER_CHAT}\nsecret_env = "CI_HOOK_SECRET"\n')
    port = free_port()
    env = {**os.environ, **settings_env}
    env.update(
        PALUI_CONFIG=str(config), CI_HOOK_SECRET=HOOK_SECRET, PALUI_HTTP_PORT=str(port),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )  # fmt: skip
    yield env, f"http://127.0.0.1:{port}"


async def _spawn(env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "palui.cli.main", "run", env=env, cwd=str(cwd),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip


async def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as response,
    ):
        return response.status


@pytest.mark.slow
async def test_a_delivery_stored_when_the_process_dies_is_summarised_after_restart(
    daemon_env, fake_telegram, fake_model, tmp_path: Path
) -> None:
    env, base = daemon_env
    fake_model.queue(Script(hang=True), Script(text="CI is green."))
    body = json.dumps({"build": 7, "result": "passed"}).encode()
    timestamp = str(int(time.time()))
    digest = hmac.new(HOOK_SECRET.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    headers = {
        "X-Palui-Timestamp": timestamp,
        "X-Palui-Signature": f"sha256={digest.hexdigest()}",
        "Content-Type": "application/json",
    }
    first = await _spawn(env, tmp_path)
    try:
        # The menu is set once the HTTP server listens (getUpdates comes before it).
        await fake_telegram.wait_for_request("setMyCommands", timeout=60)
        assert await _post(f"{base}/webhooks/ci", body, headers) == 202
        await fake_model.wait_until_in_flight(timeout=60)  # the summary is being written
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    assert fake_telegram.sent_messages(OWNER_CHAT) == []

    second = await _spawn(env, tmp_path)
    try:
        [message] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
        assert message["text"] == "📨 Webhook ci\nCI is green."
        assert '"build": 7' in fake_model.requests[1].messages[-1]["content"]
    finally:
        second.terminate()
        await asyncio.wait_for(second.wait(), 30)
    assert len(fake_model.requests) == 2


async def test_doctor_names_a_webhook_whose_secret_is_missing(
    settings_env, fake_model, fake_telegram, tmp_path: Path, monkeypatch
) -> None:
    import io

    from palui.cli.doctor import run_doctor

    config = tmp_path / "palui.toml"
    config.write_text('[webhooks.ci]\nchat_id = 5\nsecret_env = "CI_HOOK_SECRET"\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    assert "❌ http: [webhooks.ci] secret_env" in out.getvalue()
    monkeypatch.setenv("CI_HOOK_SECRET", HOOK_SECRET)
    out = io.StringIO()
    await run_doctor(None, out)
    assert "✅ http: 127.0.0.1:0, 1 webhook(s), Telegram polling" in out.getvalue()


def test_webhook_secrets_are_among_the_secrets_logs_redact(run_env, monkeypatch) -> None:
    from palui.config import load_settings

    monkeypatch.setenv("CI_HOOK_SECRET", HOOK_SECRET)
    assert HOOK_SECRET in load_settings().secrets()
