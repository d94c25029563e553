"""The console as an aiohttp sub-application, mounted at `/ui` by the HTTP server: every page,
one line per page module (each exposes `routes(deps)`)."""

from __future__ import annotations

from aiohttp import web

from palui.web import access, approvals, connectors, jobs, turns, usage
from palui.web.deps import WebDeps
from palui.web.render import JINJA, STATIC, environment, render, see_other


async def _home(_request: web.Request) -> web.Response:
    return see_other("/ui/turns")


async def _not_found(request: web.Request) -> web.Response:
    return render(request, "not_found.html", status=404)


def add_routes(app: web.Application, deps: WebDeps) -> None:
    app.router.add_get("/", _home, name="home")
    app.router.add_static("/static", STATIC, name="static")
    app.add_routes(access.routes(deps))
    app.add_routes(turns.routes(deps))
    app.add_routes(approvals.routes(deps))
    app.add_routes(usage.routes(deps))
    app.add_routes(connectors.routes(deps))
    app.add_routes(jobs.routes(deps))
    # Last: any other /ui path is a 404 page, after the session check (a 401 without one).
    app.router.add_route("*", "/{tail:.*}", _not_found, name="not_found")


def console_app(deps: WebDeps) -> web.Application:
    app = web.Application(middlewares=[access.middleware(deps)])
    app[JINJA] = environment()
    add_routes(app, deps)
    return app
