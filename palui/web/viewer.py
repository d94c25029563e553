"""Who is looking: set by the access middleware on every signed-in request."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True, slots=True)
class Viewer:
    user_id: int
    chat_ids: frozenset[int]  # the chats this person may see and decide in
    csrf: str  # the session's token: every form posts it back
    display: str = ""  # "@ana": how a decision names the person


def viewer_of(request: web.Request) -> Viewer:
    viewer = request["viewer"]
    assert isinstance(viewer, Viewer)
    return viewer
