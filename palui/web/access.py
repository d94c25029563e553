"""Who may see the console: sign-in links from `/web`, session cookies, CSRF on every POST.

A sign-in link opens a confirmation page (GET changes nothing, so a link preview fetched by a
messenger cannot use the link up); its button POSTs the token, which is used once and opens a
session. That POST must come from the console's own page: its `Origin` (or, without one, its
`Referer`) must be the console's origin (PALUI_WEB_URL's, else the Host the request was sent
to), so another site cannot sign a browser into a session of the site's choosing. Failed
sign-ins count against the client's address (the HTTP server's throttle): past the limit, a
wrong token gets 429 (a right one always signs in). The cookie is HttpOnly and SameSite=Strict
(and Secure when the public URL is https), scoped to `/ui`. Every other `/ui` path needs a live
session of a person still in `PALUI_ALLOWED_USERS`; without one it answers 401 with a page that
says to send `/web`. A POST whose form does not carry the session's CSRF token is refused (403)
before any handler runs.
"""

from __future__ import annotations

import hmac
import warnings
from collections.abc import Awaitable, Callable
from datetime import timedelta

from aiohttp import web
from aiohttp.typedefs import Middleware
from aiohttp.web_exceptions import NotAppKeyWarning
from yarl import URL

from palui.logs import get_logger
from palui.web.deps import WebDeps
from palui.web.render import render, see_other
from palui.web.viewer import Viewer

log = get_logger("palui.web")

COOKIE = "palui_session"
PUBLIC = frozenset({"signin", "signin_use", "signed_out"})
SIGNIN = "signin"  # the throttle's endpoint

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _refused(request: web.Request, status: int, reason: str) -> web.Response:
    return render(request, "signed_out.html", status=status, reason=reason)


def sent_from_console(request: web.Request, web_url: str | None) -> bool:
    """Was this POST sent by a page of the console? Its Origin, or its Referer where a browser
    sent no Origin, must be the console's origin: PALUI_WEB_URL's, else the request's Host
    (any scheme: behind a TLS-terminating proxy the request itself arrives as http). Neither
    header, or `Origin: null`, is a refusal."""
    given = request.headers.get("Origin") or request.headers.get("Referer")
    try:
        sender = URL(given or "")
        own = URL(web_url) if web_url else URL(f"{sender.scheme}://{request.host}")
    except ValueError:
        return False
    if not sender.absolute or not sender.host or not own.absolute:
        return False
    return (sender.scheme, sender.host, sender.port) == (own.scheme, own.host, own.port)


def middleware(deps: WebDeps) -> Middleware:
    @web.middleware
    async def access(request: web.Request, handler: Handler) -> web.StreamResponse:
        route = request.match_info.route
        if route.name in PUBLIC:
            return await handler(request)
        viewer = await _viewer(deps, request.cookies.get(COOKIE))
        if viewer is None:
            return _refused(request, 401, "signed_out")
        with warnings.catch_warnings():  # the key is the pages' contract: a plain "viewer"
            warnings.simplefilter("ignore", NotAppKeyWarning)
            request["viewer"] = viewer
        if request.method not in ("GET", "HEAD"):
            form = await request.post()
            given = form.get("csrf")
            if not isinstance(given, str) or not hmac.compare_digest(given, viewer.csrf):
                log.warning("web_csrf_refused", user_id=viewer.user_id, path=request.path)
                return _refused(request, 403, "csrf")
        return await handler(request)

    return access


async def _viewer(deps: WebDeps, cookie: str | None) -> Viewer | None:
    if not cookie:
        return None
    session = await deps.store.web.session(cookie, deps.now())
    if session is None or session.user_id not in deps.allowed_users:
        return None
    groups = await deps.store.web.chats_spoken_in(session.user_id)
    chats = frozenset({session.user_id, *groups})
    topics = await deps.store.topics.named(chats)
    return Viewer(session.user_id, chats, session.csrf, session.display, topics)


def routes(deps: WebDeps) -> list[web.RouteDef]:
    async def signin(request: web.Request) -> web.Response:
        return render(request, "signin.html", token=request.match_info["token"])

    async def use_link(request: web.Request) -> web.StreamResponse:
        if not sent_from_console(request, deps.web_url):
            log.warning("web_signin_cross_site", remote=request.remote)
            return _refused(request, 403, "origin")
        form = await request.post()
        token = form.get("token")
        ttl = timedelta(days=deps.session_days)
        cookie = None
        if isinstance(token, str) and token:
            cookie = await deps.store.web.redeem(token, deps.now(), ttl)
        if cookie is None:
            wait = deps.throttle.retry_after(SIGNIN, request.remote)
            if wait is not None:
                throttled = _refused(request, 429, "throttled")
                throttled.headers["Retry-After"] = str(wait)
                return throttled
            if deps.throttle.failed(SIGNIN, request.remote):
                log.warning("auth_throttled", endpoint=SIGNIN, remote=request.remote)
            log.warning("web_link_refused", remote=request.remote)
            return _refused(request, 401, "link")
        answer = see_other("/ui/turns")
        answer.set_cookie(
            COOKIE,
            cookie,
            max_age=int(ttl.total_seconds()),
            path="/ui",
            httponly=True,
            samesite="Strict",
            secure=deps.secure_cookies,
        )
        log.info("web_signed_in")
        return answer

    async def sign_out(request: web.Request) -> web.StreamResponse:
        viewer = request["viewer"]
        await deps.store.web.end_sessions(viewer.user_id)
        answer = see_other("/ui/bye")
        answer.del_cookie(COOKIE, path="/ui")
        return answer

    async def signed_out(request: web.Request) -> web.Response:
        return _refused(request, 200, "bye")

    return [
        web.get("/signin/{token}", signin, name="signin"),
        web.post("/signin", use_link, name="signin_use"),
        web.get("/bye", signed_out, name="signed_out"),
        web.post("/signout", sign_out, name="signout"),
    ]
