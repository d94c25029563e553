"""The web console's door: a one-time link from /web, a session cookie, CSRF on every POST."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from palui.config import Settings
from tests import toolkit
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.fakes.web_console import link_in, signed_in, use_link

PAGES = ["/ui", "/ui/", "/ui/turns", "/ui/approvals", "/ui/static/palui.css", "/ui/nothing"]


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_without_a_session_every_console_path_says_to_send_web(settings: Settings) -> None:
    async with (
        running_palui(settings, toolkit.ScriptedModel()) as (app, _chat),
        aiohttp.ClientSession() as session,
    ):
        for path in PAGES:
            async with session.get(app.http.url + path) as answer:
                assert answer.status == 401, path
                assert "/web" in await answer.text()
        async with session.post(app.http.url + "/ui/signout", data={"csrf": "x"}) as answer:
            assert answer.status == 401


async def test_a_link_signs_in_once(settings: Settings) -> None:
    async with (
        running_palui(settings, toolkit.ScriptedModel()) as (app, chat),
        signed_in(app, chat) as web,
    ):
        page = await web.get("/ui/turns")
        assert "Turns" in page and "Sign out" in page
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as other:
            again = await use_link(other, link_in(chat))
            assert again.status == 401
            async with other.get(app.http.url + "/ui/turns") as answer:
                assert answer.status == 401
