"""The web console in tests: signed in for real through `/web`, or built with a fixed viewer.

Through the app (every check as in production):

    async with running_palui(settings, model) as (app, chat):
        async with signed_in(app, chat) as web:          # /web, then the link's Sign in
            page = await web.get("/ui/turns")            # text of the page (raises on non-2xx)
            await web.post("/ui/approvals/<id>/approve")  # the session's CSRF token is added

A page module alone, with a fixed `Viewer` and no session (no CSRF check either):

    app = console_with_viewer(deps, Viewer(USER_ID, frozenset({CHAT_ID}), "csrf"))
    async with TestClient(TestServer(app)) as client: ...

`web_deps(store, ...)` builds a `WebDeps` with harmless defaults for the parts a test leaves out.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.web_exceptions import NotAppKeyWarning

from palui.approvals.decisions import Approvals
from palui.db import Store
from palui.http.throttle import FailureThrottle
from palui.web.deps import WebDeps
from palui.web.render import JINJA, environment
from palui.web.routes import add_routes
from palui.web.viewer import Viewer
from tests.fakes.memory_channel import MemoryChannel

LINK = re.compile(r"https?://\S+/ui/signin/[A-Za-z0-9_-]+")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def link_in(chat: MemoryChannel) -> str:
    """The last sign-in link Palui sent in the chat."""
    for text in reversed(chat.texts()):
        if found := LINK.search(text):
            return found.group(0)
    raise AssertionError(f"no sign-in link in {chat.texts()!r}")


@dataclass
class WebClient:
    """A browser without a browser: the session cookie and the CSRF token of its forms."""

    session: aiohttp.ClientSession
    base: str
    csrf: str = ""

    async def get(self, path: str, *, status: int = 200) -> str:
        async with self.session.get(self.base + path, allow_redirects=False) as answer:
            text = await answer.text()
            assert answer.status == status, (answer.status, text[:500])
            if found := CSRF.search(text):
                self.csrf = found.group(1)
            return text

    async def post(
        self, path: str, data: dict[str, str] | None = None, *, csrf: bool = True
    ) -> aiohttp.ClientResponse:
        form = dict(data or {})
        if csrf:
            form.setdefault("csrf", self.csrf)
        async with self.session.post(self.base + path, data=form, allow_redirects=False) as a:
            await a.read()
            return a


async def use_link(
    session: aiohttp.ClientSession, link: str, *, origin: str | None = None
) -> aiohttp.ClientResponse:
    """Open the link and press its Sign in button (sent, as a browser does, with the page's
    origin; `origin` replaces it)."""
    async with session.get(link) as page:
        token = re.search(r'name="token" value="([^"]+)"', await page.text())
    assert token is not None
    base = link.split("/ui/signin/")[0]
    headers = {"Origin": origin or base}
    async with session.post(
        f"{base}/ui/signin", data={"token": token.group(1)}, headers=headers, allow_redirects=False
    ) as answer:
        await answer.read()
        return answer


@asynccontextmanager
async def signed_in(app: Any, chat: MemoryChannel) -> AsyncIterator[WebClient]:
    """Send /web in the chat and sign in with its link."""
    await chat.command("web")
    link = link_in(chat)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        answer = await use_link(session, link)
        assert answer.status == 303, answer.status
        client = WebClient(session, app.http.url)
        await client.get("/ui/turns")  # picks up the CSRF token
        yield client


def web_deps(
    store: Store,
    *,
    allowed_users: frozenset[int],
    channel: MemoryChannel | None = None,
    now: Callable[[], datetime] | None = None,
    woken: list[int] | None = None,
    **fields: Any,
) -> WebDeps:
    clock = now or (lambda: datetime.now(UTC))
    chat = channel or MemoryChannel()
    approvals = fields.pop("approvals", None) or Approvals(store, chat, ttl_s=86_400, now=clock)
    wakes = woken if woken is not None else []
    throttle = fields.pop("throttle", None) or FailureThrottle()
    return WebDeps(store, approvals, clock, allowed_users, wakes.append, throttle, **fields)


def console_with_viewer(deps: WebDeps, viewer: Viewer) -> web.Application:
    """The console's pages under /ui with `viewer` signed in (no session, no CSRF check)."""

    @web.middleware
    async def fixed(request: web.Request, handler: Any) -> web.StreamResponse:
        with warnings.catch_warnings():  # the pages' contract is the plain key "viewer"
            warnings.simplefilter("ignore", NotAppKeyWarning)
            request["viewer"] = viewer
        return await handler(request)

    console = web.Application(middlewares=[fixed])
    console[JINJA] = environment()
    add_routes(console, deps)
    root = web.Application()
    root.add_subapp("/ui", console)
    return root
