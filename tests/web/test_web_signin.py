"""The console's sign-in form takes posts from its own page only, failed sign-ins are
throttled per client address (a right link always signs in), and a delivered link's token is
nowhere in the database."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import select

from palui.config import Settings
from palui.db import Store
from palui.db.models import Base
from palui.domain.sealed import CLOSE, OPEN
from palui.errors import ChannelError
from palui.http.throttle import MAX_FAILURES
from palui.web.access import COOKIE
from tests import toolkit
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui
from tests.fakes.web_console import link_in, use_link

EVIL = "https://evil.example"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def _jar() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def _sign_in(
    base: str, token: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], str]:
    async with (
        _jar() as session,
        session.post(
            f"{base}/ui/signin", data={"token": token}, headers=headers, allow_redirects=False
        ) as answer,
    ):
        return answer.status, dict(answer.headers), await answer.text()


async def test_a_sign_in_posted_from_another_site_is_refused_and_spends_nothing(
    settings: Settings,
) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        await chat.command("web")
        link = link_in(chat)
        base, token = app.http.url, link.rsplit("/", 1)[1]
        for headers in (
            {"Origin": EVIL},
            {"Origin": "null"},  # a sandboxed frame, or a page that sends no referrer
            {"Referer": f"{EVIL}/ui/signin/{token}"},
            {},  # neither header: no browser posts a form so
            {"Origin": EVIL, "Referer": link},  # the Origin decides where there is one
            {"Origin": base.replace("127.0.0.1", "localhost")},
        ):
            status, answer_headers, page = await _sign_in(base, token, headers)
            assert status == 403, headers
            assert COOKIE not in answer_headers.get("Set-Cookie", "")
            assert "not sent from this console" in page
        # The link still works, from the console's own page (by its Referer where no Origin).
        status, answer_headers, _ = await _sign_in(base, token, {"Referer": link})
        assert status == 303 and COOKIE in answer_headers["Set-Cookie"]


async def test_with_palui_web_url_only_its_origin_may_post_the_sign_in(
    settings: Settings,
) -> None:
    settings = settings.model_copy(update={"web_url": "https://palui.example/"})
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        await chat.command("web")
        local = app.http.url + link_in(chat).removeprefix("https://palui.example")
        async with _jar() as session:
            assert (await use_link(session, local)).status == 403  # its own host is not it
            assert (await use_link(session, local, origin="http://palui.example")).status == 403
            answer = await use_link(session, local, origin="https://palui.example:443")
            assert answer.status == 303


async def test_failed_sign_ins_are_throttled_per_client_and_a_right_link_still_works(
    settings: Settings,
) -> None:
    proxy = (ipaddress.ip_network("127.0.0.0/8"),)
    settings = settings.model_copy(update={"http_trusted_proxies": proxy})
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        base = app.http.url
        guesser = {"Origin": base, "X-Forwarded-For": "203.0.113.7"}
        for n in range(MAX_FAILURES):
            status, _, page = await _sign_in(base, f"guess-{n}", guesser)
            assert status == 401 and "no longer works" in page
        status, headers, page = await _sign_in(base, "guess-again", guesser)
        assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60
        assert "Too many tries" in page
        # Another client behind the same proxy is not held back.
        other = {"Origin": base, "X-Forwarded-For": "198.51.100.20"}
        assert (await _sign_in(base, "guess-other", other))[0] == 401
        # And a right link signs in whoever sends it.
        await chat.command("web")
        token = link_in(chat).rsplit("/", 1)[1]
        status, headers, _ = await _sign_in(base, token, guesser)
        assert status == 303 and COOKIE in headers["Set-Cookie"]


async def _every_stored_value(store: Store) -> list[str]:
    """Every value of every row of every table, as text: what a copy of the database holds."""
    values = []
    async with store.db.session() as s:
        for table in Base.metadata.sorted_tables:
            for row in (await s.execute(select(table))).all():
                values.extend(str(value) for value in row)
    return values


async def test_a_delivered_link_leaves_no_usable_token_in_the_database(
    settings: Settings,
) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        await chat.command("web")
        link = link_in(chat)
        token = link.rsplit("/", 1)[1]
        assert OPEN not in chat.texts()[-1] and CLOSE not in chat.texts()[-1]
        stored = await _every_stored_value(app.store)
        assert not any(token in value for value in stored)
        assert any("/ui/signin/(sent once, not kept)" in value for value in stored)
        async with _jar() as session:
            assert (await use_link(session, link)).status == 303  # the person's copy works
        async with _jar() as session:
            assert (await use_link(session, link)).status == 401  # once


class FlakyChannel(MemoryChannel):
    """Telegram unreachable for the next send."""

    down: bool = False

    async def send_part(self, chat_id: int, part: object, *, reply_to: int | None = None) -> None:
        if self.down:
            self.down = False
            raise ChannelError("Telegram can't be reached")
        await super().send_part(chat_id, part, reply_to=reply_to)


async def test_a_link_not_yet_delivered_is_kept_whole_until_it_goes_out(
    settings: Settings,
) -> None:
    chat = FlakyChannel()
    async with running_palui(settings, toolkit.ScriptedModel(), chat) as (app, _):
        chat.down = True
        await chat.command("web")
        assert chat.texts() == []
        [waiting] = await app.store.outbox.pending(chat.chat_id)
        assert "/ui/signin/" + OPEN in waiting.text  # a restart could still send it
        await chat.command("help")  # the next delivery sends what waits first
        link = link_in(chat)
        stored = await _every_stored_value(app.store)
        assert not any(link.rsplit("/", 1)[1] in value for value in stored)
        async with _jar() as session:
            assert (await use_link(session, link)).status == 303
