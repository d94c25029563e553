"""Palui with a remote MCP server that asks a person to sign in (tests/fakes/oauth_server.py),
in this process; the tests play the person's browser with aiohttp.

    async with palui_with_tracker(database_url, tmp_path) as t:     # t.app, t.chat, t.auth
        link = await connect_link(t.chat)                           # /connect tracker
        await follow(link)                                          # the browser signs in
        await t.chat.wait_for(connected)

`second_palui(t, ...)` starts another Palui on the same database and the same servers (another
process behind the same URL): its own channel, its own HTTP server, nothing shared in memory.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from palui.config import Settings
from palui.connectors import McpConnector
from palui.domain import Card
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui
from tests.fakes.oauth_server import AuthServer, oauth_servers
from tests.toolkit import ScriptedModel

BOUND_S = 20
SECRET = "a passphrase for the tests"


@dataclass
class WatchedChannel(MemoryChannel):
    """A memory channel a test can await a message on."""

    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    deleted: list[int] = field(default_factory=list)

    async def send_part(self, chat_id: int, part: Any, *, reply_to: int | None = None) -> None:
        await super().send_part(chat_id, part, reply_to=reply_to)
        self._arrived.set()

    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        message_id = await super().send_card(chat_id, card)
        self._arrived.set()
        return message_id

    async def answer_callback(self, callback_query_id: str, text: str) -> None:
        await super().answer_callback(callback_query_id, text)
        self._arrived.set()

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        self.deleted.append(message_id)

    async def wait_for_toast(self, callback_query_id: str) -> str:
        async with asyncio.timeout(BOUND_S):
            while True:
                found = [toast for cb, toast in self.answers if cb == callback_query_id]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()

    async def wait_for_card(self, wanted: Callable[[Card], bool]) -> Card:
        async with asyncio.timeout(BOUND_S):
            while True:
                found = [c for c in self.cards if wanted(c)]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()

    async def wait_for(self, wanted: Callable[[str], bool], *, chat_id: int | None = None) -> str:
        """The last text `wanted` sent to `chat_id` (the channel's own chat by default)."""
        async with asyncio.timeout(BOUND_S):
            while True:
                found = [t for t in self.texts(chat_id) if wanted(t)]
                if found:
                    return found[-1]
                self._arrived.clear()
                await self._arrived.wait()


@dataclass
class Setup:
    app: Any
    chat: WatchedChannel
    auth: AuthServer
    url: str
    settings: Settings | None = None


@asynccontextmanager
async def palui_with_tracker(
    database_url: str,
    tmp_path: Path,
    *,
    documents: bool = False,
    model: ScriptedModel | None = None,
    trust: str = "untrusted",
    **fields: Any,
) -> AsyncIterator[Setup]:
    async with oauth_servers(metadata_documents=documents) as (auth, url):
        settings = in_memory_settings(
            database_url, str(tmp_path / "data"), mcp={"tracker": {"url": url, "trust": trust}},
            secret_key=SECRET, **fields,
        )  # fmt: skip
        chat = WatchedChannel()
        async with running_palui(settings, model or ScriptedModel([]), chat) as (app, _):
            yield Setup(app, chat, auth, url, settings)


@asynccontextmanager
async def second_palui(t: Setup, model: ScriptedModel | None = None) -> AsyncIterator[Setup]:
    """Another Palui on `t`'s database and servers; its update ids are not `t`'s."""
    assert t.settings is not None
    chat = WatchedChannel(_ids=itertools.count(500_000))
    async with running_palui(t.settings, model or ScriptedModel([]), chat) as (app, _):
        yield Setup(app, chat, t.auth, t.url, t.settings)


def tracker(app: Any) -> McpConnector:
    connector = app.connectors.get("mcp-tracker")
    assert connector is not None
    return connector


async def connect_link(chat: WatchedChannel) -> str:
    await chat.command("connect", "tracker")
    reply = await chat.wait_for(lambda t: t.startswith("Sign in to mcp-tracker"))
    return next(word for word in reply.split() if "/authorize?" in word)


async def follow(link: str, *, redirects: bool = True) -> aiohttp.ClientResponse:
    async with aiohttp.ClientSession() as browser:
        response = await browser.get(link, allow_redirects=redirects)
        await response.read()
        return response


def connected(text: str) -> bool:
    return text.startswith("✅ mcp-tracker connected")


def asks(card: Card) -> bool:
    return card.text.startswith("❓ mcp-tracker asks")
