"""Turns: newest first, filterable by chat, kind and status; a turn's page shows its steps."""

from __future__ import annotations

from aiohttp import web

from palui.web.deps import WebDeps
from palui.web.render import render
from palui.web.viewer import viewer_of


def routes(deps: WebDeps) -> list[web.RouteDef]:
    async def listing(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        return render(request, "turns.html", nav="turns", chats=sorted(viewer.chat_ids))

    return [web.get("/turns", listing, name="turns")]
