"""Authentication at Palui's HTTP server holds against a guesser, a replayer and a bad header.

Long secrets whatever the bind, failed authentications throttled per remote address and
endpoint (a right secret always let in), a signed delivery accepted once (also across
processes), a malformed header a 401.
Requests go through the real aiohttp server (only the HTTP part of Palui, over a real store);
a second sender's own address is 127.0.0.2, which Linux routes on loopback like 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from palui.cli.doctor import run_doctor
from palui.cli.main import main
from palui.db import Database, Store
from palui.http.server import HttpServer, TelegramWebhook
from palui.http.throttle import MAX_FAILURES, FailureThrottle
from palui.webhooks.auth import signature
from palui.webhooks.specs import WebhookSpec
from tests.conftest import OWNER_CHAT
from tests.toolkit import AUTH_BODY as BODY
from tests.toolkit import AUTH_SECRET as SECRET
from tests.toolkit import TG_SECRET
from tests.toolkit import post_from as post

OTHER_ADDRESS = "127.0.0.2"


@dataclass
class Served:
    url: str
    store: Store
    stored: list[int] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)


def signed(body: bytes = BODY, at: int | None = None, secret: str = SECRET) -> dict[str, str]:
    timestamp = str(int(time.time()) if at is None else at)
    return {
        "X-Palui-Timestamp": timestamp,
        "X-Palui-Signature": signature(secret, timestamp, body),
        "Content-Type": "application/json",
    }


def server_for(store: Store, served: Served, throttle: FailureThrottle | None) -> HttpServer:
    async def feed(update: dict[str, Any]) -> None:
        served.updates.append(update)

    return HttpServer(
        store,
        host="127.0.0.1",
        port=0,
        webhooks={
            "github": WebhookSpec("github", OWNER_CHAT, SECRET),
            "ci": WebhookSpec("ci", OWNER_CHAT, SECRET),
        },
        on_webhook_stored=served.stored.append,
        telegram=TelegramWebhook(TG_SECRET, feed),
        throttle=throttle,
    )


@asynccontextmanager
async def serve(store: Store, throttle: FailureThrottle | None = None) -> AsyncIterator[Served]:
    served = Served("", store)
    server = server_for(store, served, throttle)
    await server.start()
    served.url = server.url
    try:
        yield served
    finally:
        await server.stop()


@pytest.fixture
async def http(store: Store) -> AsyncIterator[Served]:
    async with serve(store) as served:
        yield served


@pytest.fixture
async def lenient_http(store: Store) -> AsyncIterator[Served]:
    """A server whose throttle never starts, for tests that send many bad requests."""
    async with serve(store, FailureThrottle(limit=10_000)) as served:
        yield served


# -- secrets of at least 16 characters, whatever the bind ----------------------------------------


@pytest.fixture
def run_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Enough for `palui run` to reach its HTTP checks, listening on loopback only."""
    monkeypatch.setenv("PALUI_TELEGRAM_TOKEN", "123:abc")
    monkeypatch.setenv("PALUI_ALLOWED_USERS", "1")
    monkeypatch.setenv("PALUI_MODEL", "openai/none")
    monkeypatch.setenv("PALUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PALUI_HTTP_HOST", "127.0.0.1")
    config = tmp_path / "palui.toml"
    config.write_text('[webhooks.ci]\nchat_id = 5\nsecret_env = "CI_HOOK_SECRET"\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    return config


def test_a_short_webhook_secret_stops_the_start_even_on_loopback(
    run_env, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("CI_HOOK_SECRET", "short-secret-15")
    assert main(["run"]) == 2
    error = capsys.readouterr().err
    assert "[webhooks.ci] secret_env" in error and "CI_HOOK_SECRET" in error
    assert "at least 16" in error
    assert "short-secret-15" not in error
    assert not (run_env.parent / "data").exists()  # refused before the database was touched


def test_a_short_telegram_webhook_secret_stops_the_start_even_on_loopback(
    run_env, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("CI_HOOK_SECRET", SECRET)
    monkeypatch.setenv("PALUI_TELEGRAM_WEBHOOK_URL", "https://bot.example/telegram")
    monkeypatch.setenv("PALUI_TELEGRAM_WEBHOOK_SECRET", "tg-short")
    assert main(["run"]) == 2
    error = capsys.readouterr().err
    assert "PALUI_TELEGRAM_WEBHOOK_SECRET" in error and "at least 16" in error
    assert "tg-short" not in error


def test_a_secret_of_16_characters_is_long_enough(run_env, monkeypatch) -> None:
    from palui.config import load_settings
    from palui.webhooks.specs import load_webhooks

    monkeypatch.setenv("CI_HOOK_SECRET", "x" * 16)
    monkeypatch.setenv("PALUI_TELEGRAM_WEBHOOK_SECRET", "y" * 16)
    assert list(load_webhooks(load_settings())) == ["ci"]


async def test_doctor_names_a_short_webhook_secret(
    settings_env, tmp_path: Path, monkeypatch
) -> None:
    config = tmp_path / "palui.toml"
    config.write_text('[webhooks.ci]\nchat_id = 5\nsecret_env = "CI_HOOK_SECRET"\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    monkeypatch.setenv("CI_HOOK_SECRET", "short1")
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    report = out.getvalue()
    assert "❌ http: [webhooks.ci] secret_env" in report and "at least 16" in report
    assert "short1" not in report


# -- failed authentications are throttled ---------------------------------------------------------


async def test_wrong_secrets_from_one_address_get_429_but_the_right_secret_always_gets_in(
    http: Served,
) -> None:
    url = f"{http.url}/webhooks/github"
    wrong = {"X-Palui-Secret": "not-the-secret-at-all", "Content-Type": "application/json"}
    statuses = [(await post(url, wrong)).status for _ in range(MAX_FAILURES)]
    assert statuses == [401] * MAX_FAILURES

    throttled = await post(url, wrong)
    assert throttled.status == 429
    assert set(throttled.body) == {"error"} and "try again" in throttled.body["error"]
    assert 1 <= int(throttled.headers["Retry-After"]) <= 60
    # Behind one proxy the guesser's address is the sender's: the right secret is let in.
    right = {"X-Palui-Secret": SECRET, "Content-Type": "application/json"}
    accepted = await post(url, right)
    assert accepted.status == 202, accepted.body
    assert (await post(url, signed())).status == 202
    assert (await post(url, wrong)).status == 429  # a success forgives no failure

    # Another address, and the same address on another webhook, count on their own.
    assert (await post(url, wrong, source=OTHER_ADDRESS)).status == 401
    assert (await post(f"{http.url}/webhooks/ci", wrong)).status == 401
    assert await http.store.webhooks.count() == 2
    assert http.stored == [OWNER_CHAT, OWNER_CHAT]


async def test_concurrent_guesses_get_only_the_allowed_number_of_401s(http: Served) -> None:
    burst = 3 * MAX_FAILURES
    url = f"{http.url}/webhooks/github"
    wrong = {"X-Palui-Secret": "not-the-secret-at-all"}
    answers = await asyncio.gather(*(post(url, wrong) for _ in range(burst)))
    statuses = sorted(answer.status for answer in answers)
    assert statuses == [401] * MAX_FAILURES + [429] * (burst - MAX_FAILURES)
    assert await http.store.webhooks.count() == 0


async def test_the_right_telegram_secret_token_gets_in_after_wrong_ones_from_its_address(
    http: Served,
) -> None:
    url = f"{http.url}/telegram"
    update = json.dumps({"update_id": 7}).encode()
    wrong = {"X-Telegram-Bot-Api-Secret-Token": "guess-0123456789abc"}
    for _ in range(MAX_FAILURES):
        assert (await post(url, wrong, update)).status == 401
    throttled = await post(url, wrong, update)
    assert throttled.status == 429 and "Retry-After" in throttled.headers
    assert set(throttled.body) == {"error"}
    assert http.updates == []

    right = {"X-Telegram-Bot-Api-Secret-Token": TG_SECRET}
    assert (await post(url, right, update)).status == 200
    assert http.updates == [{"update_id": 7}]
    assert (await post(url, wrong, update, source=OTHER_ADDRESS)).status == 401


def test_the_throttle_forgets_old_failures_and_keeps_a_bounded_number_of_addresses() -> None:
    now = [1000.0]
    throttle = FailureThrottle(limit=3, window_s=60, max_keys=100, clock=lambda: now[0])
    address = "203.0.113.9"
    throttle.failed("webhook:github", address)
    throttle.failed("webhook:github", address)
    now[0] += 30
    assert throttle.retry_after("webhook:github", address) is None
    assert throttle.failed("webhook:github", address)  # the 3rd in the window starts it
    assert throttle.retry_after("webhook:github", address) == 30  # the 1st leaves at 1060
    assert throttle.retry_after("telegram", address) is None  # per endpoint
    now[0] += 30
    assert throttle.retry_after("webhook:github", address) is None  # one left in the window
    now[0] += 30
    assert throttle.tracked == 0  # an address whose failures are all old is dropped

    for n in range(10_000):  # a guesser hopping addresses
        throttle.failed("webhook:github", f"10.{n // 65536}.{n // 256 % 256}.{n % 256}")
    assert throttle.tracked == 100


def test_ipv6_addresses_count_by_their_64_block() -> None:
    throttle = FailureThrottle(limit=2, window_s=60)
    throttle.failed("telegram", "2001:db8:1:2::1")
    throttle.failed("telegram", "2001:db8:1:2:ffff::9")
    assert throttle.retry_after("telegram", "2001:db8:1:2::77") is not None
    assert throttle.retry_after("telegram", "2001:db8:1:3::1") is None


# -- a signed delivery is accepted once ------------------------------------------------------------


async def test_a_replayed_signed_delivery_gets_409_and_is_stored_once(http: Served) -> None:
    url = f"{http.url}/webhooks/github"
    now = int(time.time())
    headers = signed(at=now)
    first = await post(url, headers)
    assert first.status == 202
    replay = await post(url, headers, source=OTHER_ADDRESS)
    assert replay.status == 409
    assert set(replay.body) == {"error"} and "already accepted" in replay.body["error"]
    # The same signature spelled in capitals is the same delivery.
    shouted = {**headers, "X-Palui-Signature": headers["X-Palui-Signature"].upper()}
    assert (await post(url, shouted)).status == 409
    assert await http.store.webhooks.count() == 1
    assert http.stored == [OWNER_CHAT]  # summarised once

    # A fresh signature of the same payload is a new delivery.
    assert (await post(url, signed(at=now - 1))).status == 202
    assert await http.store.webhooks.count() == 2


async def test_a_replay_to_another_process_on_the_same_database_gets_409(
    database_url: str, store: Store
) -> None:
    other = Database(database_url)  # a second process's own connection pool
    try:
        async with serve(store) as first, serve(Store(other)) as second:
            headers = signed()
            assert (await post(f"{first.url}/webhooks/github", headers)).status == 202
            replay = await post(f"{second.url}/webhooks/github", headers)
            assert replay.status == 409 and set(replay.body) == {"error"}
            assert second.stored == []
    finally:
        await other.close()
    assert await store.webhooks.count() == 1


# -- a malformed header is a 401 ----------------------------------------------------------------


async def test_malformed_authentication_headers_get_a_json_401_and_store_nothing(
    lenient_http: Served,
) -> None:
    url = f"{lenient_http.url}/webhooks/github"
    now = int(time.time())
    good = signed(at=now)["X-Palui-Signature"]

    def with_timestamp(timestamp: str) -> dict[str, str]:
        return {"X-Palui-Timestamp": timestamp, "X-Palui-Signature": good}

    cases = {
        "superscript two": with_timestamp("²"),
        "5,000 digits": with_timestamp("9" * 5000),
        "negative": with_timestamp(f"-{now}"),
        "Arabic-Indic digits": with_timestamp("١٧٠٠٠٠٠٠٠٠"),
        "underscores": with_timestamp(f"{str(now)[:4]}_{str(now)[4:]}"),
        "a fraction": with_timestamp(f"{now}.5"),
        "empty timestamp": with_timestamp(""),
        "no timestamp": {"X-Palui-Signature": good},
        "no digest": {"X-Palui-Timestamp": str(now), "X-Palui-Signature": "sha256="},
        "no scheme": {"X-Palui-Timestamp": str(now), "X-Palui-Signature": good[7:]},
        "another scheme": {"X-Palui-Timestamp": str(now), "X-Palui-Signature": "md5=" + good[7:]},
        "not hex": {"X-Palui-Timestamp": str(now), "X-Palui-Signature": "sha256=" + "zz" * 32},
        "short digest": {"X-Palui-Timestamp": str(now), "X-Palui-Signature": good[:-2]},
        "non-ASCII secret": {"X-Palui-Secret": "sécret-ünïcode-0123456789"},
        "empty secret": {"X-Palui-Secret": ""},
    }
    for label, headers in cases.items():
        answer = await post(url, {**headers, "Content-Type": "application/json"})
        assert (label, answer.status) == (label, 401)
        assert set(answer.body) == {"error"} and answer.body["error"], label
    assert await lenient_http.store.webhooks.count() == 0
    assert lenient_http.stored == []
