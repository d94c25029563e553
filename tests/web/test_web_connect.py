"""The console's Connectors page offers 🔑 Connect for a connector that needs sign-in: the same
sign-in as `/connect <name>`, the browser sent on to the authorization server, and its end told
in the person's private chat. A protected MCP server and its authorization server on loopback
(tests/fakes/oauth_server.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from palui.domain import ConnectorState
from tests.fakes.remote_palui import (
    connected,
    follow,
    palui_with_tracker,
    tracker,
)
from tests.fakes.watched_channel import BOUND_S
from tests.fakes.web_console import signed_in


async def test_connect_on_the_page_sends_the_browser_to_sign_in(
    database_url: str, tmp_path: Path
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t, signed_in(t.app, t.chat) as web:
        async with asyncio.timeout(BOUND_S):
            await tracker(t.app).wait_settled()
        page = await web.get("/ui/connectors")
        refused = await web.post("/ui/connectors/mcp-tracker/connect", csrf=False)
        answer = await web.post("/ui/connectors/mcp-tracker/connect")
        authorize = answer.headers["Location"]
        signed = await follow(authorize)  # the authorization server, then /oauth/callback
        done = await t.chat.wait_for(connected)
        after = await web.get("/ui/connectors")
        state = tracker(t.app).state

    assert 'data-connect="mcp-tracker"' in page
    assert refused.status == 403
    assert answer.status == 303 and authorize.startswith(t.auth.url + "/authorize?")
    assert signed.status == 200
    assert done.startswith("✅ mcp-tracker connected: 5 tools")
    assert state is ConnectorState.CONNECTED
    assert 'data-connect="mcp-tracker"' not in after
