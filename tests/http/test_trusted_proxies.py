"""Behind a reverse proxy: the client is whom a trusted proxy's X-Forwarded-For names, so one
client's failures never lock out another; from anyone else the header is not believed.

Requests go through the real aiohttp server; "the proxy" is this test, sending from 127.0.0.1
with the header a proxy would add."""

from __future__ import annotations

import ipaddress
import json

import pytest

from palui.config import load_settings
from palui.db import Store
from palui.errors import ConfigError
from palui.http.clients import client_address
from palui.http.server import HttpServer, TelegramWebhook
from palui.http.throttle import MAX_FAILURES
from palui.webhooks.specs import WebhookSpec
from tests.conftest import OWNER_CHAT
from tests.toolkit import AUTH_BODY as BODY
from tests.toolkit import AUTH_SECRET as SECRET
from tests.toolkit import TG_SECRET, Answer
from tests.toolkit import post_from as post

LOOPBACK = [ipaddress.ip_network("127.0.0.0/8")]
ELSEWHERE = [ipaddress.ip_network("10.0.0.0/8")]
WRONG = {"X-Palui-Secret": "not-the-secret-at-all", "Content-Type": "application/json"}
RIGHT = {"X-Palui-Secret": SECRET, "Content-Type": "application/json"}


class Proxied:
    def __init__(self, store: Store, trusted: list[ipaddress.IPv4Network]) -> None:
        async def feed(_update: dict[str, object]) -> None:
            return None

        self.server = HttpServer(
            store, host="127.0.0.1", port=0,
            webhooks={"github": WebhookSpec("github", OWNER_CHAT, SECRET)},
            on_webhook_stored=lambda _chat: None, telegram=TelegramWebhook(TG_SECRET, feed),
            trusted_proxies=trusted,
        )  # fmt: skip

    async def __aenter__(self) -> Proxied:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()

    async def webhook(self, headers: dict[str, str], forwarded_for: str | None = None) -> Answer:
        if forwarded_for is not None:
            headers = {**headers, "X-Forwarded-For": forwarded_for}
        return await post(f"{self.server.url}/webhooks/github", headers, BODY)

    async def telegram(self, secret: str, forwarded_for: str) -> Answer:
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret, "X-Forwarded-For": forwarded_for}
        return await post(f"{self.server.url}/telegram", headers, json.dumps({"update_id": 1}))


async def test_one_proxied_clients_failures_do_not_lock_out_another(store: Store) -> None:
    async with Proxied(store, LOOPBACK) as proxy:
        guesser, sender = "203.0.113.7", "198.51.100.20"
        for _ in range(MAX_FAILURES):
            assert (await proxy.webhook(WRONG, guesser)).status == 401
        assert (await proxy.webhook(WRONG, guesser)).status == 429
        # The same proxy, another client: its failures and its deliveries are its own.
        assert (await proxy.webhook(WRONG, sender)).status == 401
        assert (await proxy.webhook(RIGHT, sender)).status == 202
        # What a client writes on the left itself is not who it is: the proxy's hop is.
        assert (await proxy.webhook(WRONG, f"{sender}, {guesser}")).status == 429
        for _ in range(MAX_FAILURES):
            assert (await proxy.telegram("guess-0123456789abc", guesser)).status == 401
        assert (await proxy.telegram("guess-0123456789abc", guesser)).status == 429
        assert (await proxy.telegram(TG_SECRET, sender)).status == 200


async def test_forwarded_for_from_an_untrusted_peer_is_not_believed(store: Store) -> None:
    async with Proxied(store, ELSEWHERE) as proxy:
        # A guesser naming a new address each time is still counted as itself.
        for n in range(MAX_FAILURES):
            assert (await proxy.webhook(WRONG, f"203.0.113.{n}")).status == 401
        assert (await proxy.webhook(WRONG, "198.51.100.99")).status == 429
        assert (await proxy.webhook(WRONG)).status == 429


async def test_without_trusted_proxies_the_header_changes_nothing(store: Store) -> None:
    async with Proxied(store, []) as proxy:
        for n in range(MAX_FAILURES):
            assert (await proxy.webhook(WRONG, f"203.0.113.{n}")).status == 401
        assert (await proxy.webhook(WRONG, "198.51.100.99")).status == 429


@pytest.mark.parametrize(
    ("peer", "headers", "client"),
    [
        ("10.0.0.2", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.2", ["6.6.6.6, 198.51.100.1"], "198.51.100.1"),  # the client wrote 6.6.6.6
        ("10.0.0.2", ["6.6.6.6", "198.51.100.1, 10.0.0.9"], "198.51.100.1"),  # two proxies
        ("10.0.0.2", ["10.0.0.7, 10.0.0.9"], "10.0.0.7"),  # only proxies: the first
        ("10.0.0.2", [], "10.0.0.2"),
        ("10.0.0.2", ["198.51.100.1, not-an-address"], "10.0.0.2"),  # unreadable: the peer
        ("10.0.0.2", ["198.51.100.1:5123"], "198.51.100.1"),
        ("10.0.0.2", ["[2001:db8::1]:443"], "2001:db8::1"),
        ("::ffff:10.0.0.2", ["198.51.100.1"], "198.51.100.1"),
        ("192.0.2.5", ["198.51.100.1"], "192.0.2.5"),  # not a proxy of ours
        (None, ["198.51.100.1"], None),
    ],
)
def test_the_client_is_the_rightmost_hop_that_is_not_a_trusted_proxy(
    peer: str | None, headers: list[str], client: str | None
) -> None:
    assert client_address(peer, headers, ELSEWHERE) == client


def test_trusted_proxies_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PALUI_TELEGRAM_TOKEN", "123:abc")
    monkeypatch.setenv("PALUI_HTTP_TRUSTED_PROXIES", "10.0.0.5, 172.16.0.0/12,fd00::/8")
    networks = [str(n) for n in load_settings().http_trusted_proxies]
    assert networks == ["10.0.0.5/32", "172.16.0.0/12", "fd00::/8"]
    monkeypatch.setenv("PALUI_HTTP_TRUSTED_PROXIES", "10.0.0.1/8")
    with pytest.raises(ConfigError, match=r"PALUI_HTTP_TRUSTED_PROXIES.*'10\.0\.0\.1/8'"):
        load_settings()
