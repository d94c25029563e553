"""The web console's door: a one-time link from /web, a session cookie, CSRF on every POST."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from palui.config import Settings
from palui.domain import ApprovalStatus, ChatUser
from palui.interact.web_link import PRIVATE_ONLY
from palui.web.access import COOKIE
from tests import toolkit
from tests.fakes.memory_channel import (
    USER_ID,
    MemoryChannel,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.notes_toolset import NOTES_ID, SWITCHED_ON, NotesToolset
from tests.fakes.web_console import link_in, signed_in, use_link

OTHER = 2002  # another allowed person, in their own private chat

PAGES = ["/ui", "/ui/", "/ui/turns", "/ui/approvals", "/ui/static/palui.css", "/ui/nothing"]


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


@asynccontextmanager
async def notes_palui(
    settings: Settings, *steps: toolkit.Step
) -> AsyncIterator[tuple[Any, MemoryChannel]]:
    model = toolkit.ScriptedModel(steps)
    async with running_palui(settings, model, toolsets=[NotesToolset()]) as (app, chat):
        await switch_on(app, NOTES_ID, *SWITCHED_ON)
        yield app, chat


async def test_without_a_session_every_console_path_says_to_send_web(settings: Settings) -> None:
    async with (
        running_palui(settings, toolkit.ScriptedModel()) as (app, _chat),
        aiohttp.ClientSession() as session,
    ):
        for path in PAGES:
            async with session.get(app.http.url + path) as answer:
                assert answer.status == 401, path
                assert "<code>/web</code>" in await answer.text()
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


async def test_an_expired_link_and_a_forged_cookie_open_nothing(settings: Settings) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, _chat):
        long_ago = datetime.now(UTC) - timedelta(minutes=11)
        token = await app.store.web.add_link(USER_ID, "@ana", long_ago, timedelta(minutes=10))
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            answer = await use_link(session, f"{app.http.url}/ui/signin/{token}")
            assert answer.status == 401
            assert not session.cookie_jar.filter_cookies(app.http.url)
        for cookie in ("forged", "x" * 43, ""):
            async with (
                aiohttp.ClientSession(cookies={COOKIE: cookie}) as session,
                session.get(app.http.url + "/ui/turns") as page,
            ):
                assert page.status == 401
                assert "<code>/web</code>" in await page.text()


async def test_the_cookie_is_httponly_strict_and_scoped_to_the_console(settings: Settings) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        await chat.command("web")
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            answer = await use_link(session, link_in(chat))
            (header,) = answer.headers.getall("Set-Cookie")
        assert "HttpOnly" in header and "SameSite=Strict" in header and "Path=/ui" in header
        assert "Secure" not in header  # the console is on plain http here
        assert link_in(chat).startswith(app.http.url + "/ui/signin/")


async def test_web_in_a_group_sends_no_link(settings: Settings) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (_app, chat):
        group = dataclasses.replace(chat.inbound(text="/web"), chat_id=-500)
        await chat.push(group)
        assert chat.texts(-500) == [PRIVATE_ONLY]


async def test_a_post_without_the_csrf_token_changes_nothing(settings: Settings) -> None:
    async with (
        notes_palui(settings, toolkit.call("mcp-notes__delete_note", {"id": "1"})) as (app, chat),
        signed_in(app, chat) as web,
    ):
        await chat.send("delete note 1")
        (pending,) = await app.store.approvals.pending(chat.chat_id)
        form = {"decision": "approve", "digest": pending.digest}
        for csrf in (None, "wrong"):
            data = form if csrf is None else {**form, "csrf": csrf}
            answer = await web.post(f"/ui/approvals/{pending.id}", data, csrf=False)
            assert answer.status == 403
            answer = await web.post(
                "/ui/signout", {} if csrf is None else {"csrf": csrf}, csrf=False
            )
            assert answer.status == 403
        assert (await app.store.approvals.by_id(pending.id)).status == ApprovalStatus.PENDING
        await web.get("/ui/approvals")  # still signed in
        answer = await web.post(f"/ui/approvals/{pending.id}", {**form, "digest": "0" * 64})
        assert answer.status == 303
        assert (await app.store.approvals.by_id(pending.id)).status == ApprovalStatus.PENDING


async def test_signing_out_and_web_revoke_end_every_session(settings: Settings) -> None:
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        async with signed_in(app, chat) as first, signed_in(app, chat) as second:
            answer = await first.post("/ui/signout")
            assert answer.status == 303 and answer.headers["Location"] == "/ui/bye"
            await first.get("/ui/turns", status=401)
            await second.get("/ui/turns", status=401)
        async with signed_in(app, chat) as third:
            await chat.command("web", "revoke")
            assert chat.texts()[-1].startswith("Signed out of the web console everywhere")
            await third.get("/ui/approvals", status=401)


async def test_a_person_of_chat_a_sees_and_decides_nothing_of_chat_b(settings: Settings) -> None:
    settings = settings.model_copy(update={"allowed_users": frozenset({USER_ID, OTHER})})
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1"}),)
    async with notes_palui(settings, *steps) as (app, chat), signed_in(app, chat) as web:
        theirs = dataclasses.replace(
            chat.inbound(text="delete note 1 please"), chat_id=OTHER,
            user=ChatUser(OTHER, "bob"),
        )  # fmt: skip
        await chat.push(theirs)
        (pending,) = await app.store.approvals.pending(OTHER)
        assert "delete note 1 please" not in await web.get("/ui/turns")
        assert "delete note 1 please" not in await web.get(f"/ui/turns?chat={OTHER}")
        await web.get(f"/ui/turns/{pending.turn_id}", status=404)
        assert pending.id not in await web.get("/ui/approvals")
        form = {"decision": "approve", "digest": pending.digest}
        answer = await web.post(f"/ui/approvals/{pending.id}", form)
        assert answer.status == 303
        assert (await app.store.approvals.by_id(pending.id)).status == ApprovalStatus.PENDING


async def test_approving_on_the_web_runs_the_call_once_and_edits_the_card(
    settings: Settings,
) -> None:
    steps = (toolkit.call("mcp-notes__delete_note", {"id": "1"}), toolkit.answer("Deleted."))
    async with notes_palui(settings, *steps) as (app, chat), signed_in(app, chat) as web:
        await chat.send("delete note 1")
        (pending,) = await app.store.approvals.pending(chat.chat_id)
        page = await web.get("/ui/approvals")
        assert "Approval needed — mcp-notes__delete_note" in page and pending.digest in page
        form = {"decision": "approve", "digest": pending.digest}
        answer = await web.post(f"/ui/approvals/{pending.id}", form)
        assert answer.headers["Location"] == "/ui/approvals?done=approved"
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "Deleted."
        answer = await web.post(f"/ui/approvals/{pending.id}", form)  # again: used up
        assert answer.headers["Location"] == "/ui/approvals?done=already"
        await app.chats.wait_idle(chat.chat_id)
        record = await app.store.approvals.by_id(pending.id)
        assert record.status == ApprovalStatus.EXECUTED and record.decided_on == "web"
        assert [c.text.splitlines()[-1] for _, _, c in chat.edits][-1].startswith(
            "✅ Approved on the web by @ana at "
        )
        assert (await app.store.turn_listing.one(pending.turn_id, {chat.chat_id})).calls == 1


async def test_links_point_at_palui_web_url_and_https_makes_the_cookie_secure(
    settings: Settings,
) -> None:
    settings = settings.model_copy(update={"web_url": "https://palui.example/"})
    async with running_palui(settings, toolkit.ScriptedModel()) as (app, chat):
        await chat.command("web")
        link = link_in(chat)
        assert link.startswith("https://palui.example/ui/signin/")
        local = app.http.url + link.removeprefix("https://palui.example")
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            answer = await use_link(session, local, origin="https://palui.example")
            assert "Secure" in answer.headers["Set-Cookie"]
