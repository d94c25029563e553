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

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from palui.config import Settings
from palui.connectors import McpConnector
from palui.domain import Card
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.fakes.oauth_server import AuthServer, oauth_servers
from tests.fakes.watched_channel import WatchedChannel
from tests.toolkit import ScriptedModel

SECRET = "a passphrase for the tests"


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
