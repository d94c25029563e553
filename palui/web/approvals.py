"""Approvals: pending ones, decidable as a tap is, and the decided ones as history."""

from __future__ import annotations

from aiohttp import web

from palui.web.deps import WebDeps
from palui.web.render import render


def routes(deps: WebDeps) -> list[web.RouteDef]:
    async def listing(request: web.Request) -> web.Response:
        return render(request, "approvals.html", nav="approvals")

    return [web.get("/approvals", listing, name="approvals")]
