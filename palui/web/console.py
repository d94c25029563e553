"""The console as an aiohttp sub-application, mounted at `/ui` by the HTTP server."""

from __future__ import annotations

from aiohttp import web

from palui.web import access
from palui.web.deps import WebDeps
from palui.web.render import JINJA, environment
from palui.web.routes import add_routes


def console_app(deps: WebDeps) -> web.Application:
    app = web.Application(middlewares=[access.middleware(deps)])
    app[JINJA] = environment()
    add_routes(app, deps)
    return app
