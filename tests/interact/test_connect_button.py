"""🔑 Connect on a connector's /connectors card: the same sign-in as `/connect <name>`, started
by a tap (private chat only), through the fake Bot API with a protected MCP server and its
authorization server on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.oauth_server import oauth_servers

GROUP = -100777


@pytest.fixture
async def tracker_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """The servers, configured as `[mcp.tracker]`; set up before Palui starts and stopped
    after it stopped (uvicorn waits for the connections Palui keeps open)."""
    async with oauth_servers() as (_auth, url):
        config = tmp_path / "palui.toml"
        config.write_text(f'[mcp.tracker]\nurl = "{url}"\n')
        monkeypatch.setenv("PALUI_CONFIG", str(config))
        monkeypatch.setenv("PALUI_SECRET_KEY", "a passphrase for the tests")
        monkeypatch.setenv("PALUI_ALLOWED_USERS", f"{OWNER_ID},4242")
        yield url


def keyboard(message: dict[str, Any]) -> dict[str, str]:
    markup = message.get("reply_markup") or {}
    if isinstance(markup, str):
        markup = json.loads(markup)
    return {b["text"]: b["callback_data"] for row in markup.get("inline_keyboard", []) for b in row}


async def test_connect_on_the_card_sends_the_sign_in_link_and_signs_in(
    tracker_url: str, start_palui: Any, fake_telegram: Any
) -> None:
    running = await start_palui()
    tracker = running.app.connectors.get("mcp-tracker")
    async with asyncio.timeout(30):
        await tracker.wait_settled()

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/connectors")
    card = await fake_telegram.wait_for_text(OWNER_CHAT, "needs sign-in")
    connect = keyboard(card)["🔑 Connect"]
    # In a group the card's button says to use the private chat, and starts nothing.
    fake_telegram.push_callback(GROUP, OWNER_ID, card["message_id"], connect)
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], connect)
    link_message = await fake_telegram.wait_for_text(OWNER_CHAT, "Sign in to mcp-tracker")
    link = next(w for w in link_message["text"].split() if "/authorize?" in w)
    async with aiohttp.ClientSession() as browser, browser.get(link) as page:
        await page.read()
    done = await fake_telegram.wait_for_text(OWNER_CHAT, "✅ mcp-tracker connected")
    toasts = [a.text for a in fake_telegram.answered_callbacks]

    assert page.status == 200
    assert done["text"].startswith("✅ mcp-tracker connected: 5 tools")
    assert "Use our private chat: send /connect tracker to me there." in toasts
    assert "Sign-in link sent below." in toasts
    assert not fake_telegram.sent_messages(GROUP)
    # The card's link message is the only one: the group tap started no sign-in.
    sent = [m for m in fake_telegram.sent_messages(OWNER_CHAT) if "Sign in to" in m["text"]]
    assert len(sent) == 1
