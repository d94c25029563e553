"""A fake MCP server that asks the person things during its calls: "desk", built with the SDK's
server side and served over streamable HTTP on loopback in the test's event loop.

`read_statement` asks the person to open the desk's page (URL mode): in the 2026 protocol as an
input-required round, in the older one (`Desk.legacy`: the server answers `server/discover` as a
pre-2026 server does) as an `elicitation/create` request with an `elicitationId`. `get_balance`
(older protocol) refuses the call with -32042 until its page was opened. `get_room` asks which
room (a form with a choice). The page, `/page?for=<id>`, is what the test's browser opens: it
records the visit and, in the older protocol, sends `notifications/elicitation/complete` for the
id, as a server whose page is done does.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import (
    METHOD_NOT_FOUND,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import PlainTextResponse

BALANCE_PAGE = "balance"


class Room(BaseModel):
    room: str = Field(json_schema_extra={"enum": ["blue", "green"]})


@dataclass
class Desk:
    """The desk's state: where its page is, what it was told, who waits for a page."""

    legacy: bool = False
    base: str = ""
    page_url: str | None = None  # set: the address it asks for instead of its own page
    actions: list[str] = field(default_factory=list)  # what each URL question was answered
    opened: list[str] = field(default_factory=list)  # the pages the browser opened
    done: set[str] = field(default_factory=set)
    waiting: dict[str, tuple[Any, str | None]] = field(default_factory=dict)  # id -> session

    def url_for(self, page: str) -> str:
        return self.page_url or f"{self.base}/page?for={page}"

    async def open_page(self, request: Request) -> PlainTextResponse:
        page = request.query_params.get("for", "")
        self.opened.append(page)
        self.done.add(page)
        if (told := self.waiting.pop(page, None)) is not None:
            session, request_id = told
            await session.send_elicit_complete(page, related_request_id=request_id)
        return PlainTextResponse("Thank you, all done here.")


def desk_server(desk: Desk) -> MCPServer:
    server = MCPServer("desk")
    server.custom_route("/page", methods=["GET"])(desk.open_page)

    @server.tool()
    async def read_statement(month: str, ctx: Context) -> str | InputRequiredResult:
        """Read the month's statement; the person signs in on the desk's page first."""
        message = f"Sign in to the desk to read the {month} statement."
        if desk.legacy:
            page = secrets.token_hex(4)
            desk.waiting[page] = (ctx.session, ctx.request_id)
            action = (await ctx.elicit_url(message, desk.url_for(page), page)).action
        else:
            answer = (ctx.input_responses or {}).get("page")
            if not isinstance(answer, ElicitResult):
                ask = ElicitRequestURLParams(message=message, url=desk.url_for("statement"))
                return InputRequiredResult(input_requests={"page": ElicitRequest(params=ask)})
            action = answer.action
        desk.actions.append(action)
        return f"{month}: 3 payments" if action == "accept" else f"no statement: {action}"

    @server.tool()
    async def get_balance(ctx: Context) -> str:
        """The balance; the desk refuses until the person has opened its page (-32042)."""
        if BALANCE_PAGE not in desk.done:
            desk.waiting[BALANCE_PAGE] = (ctx.session, None)
            ask = ElicitRequestURLParams(
                message="Confirm it is you on the desk's page.",
                url=desk.url_for(BALANCE_PAGE),
                elicitation_id=BALANCE_PAGE,
            )
            raise UrlElicitationRequiredError([ask])
        return "balance: 12 €"

    @server.tool()
    async def get_room(meeting: str, ctx: Context) -> str | InputRequiredResult:
        """The room for a meeting, as the person picks it."""
        answer = (ctx.input_responses or {}).get("room")
        if not isinstance(answer, ElicitResult):
            ask = ElicitRequestFormParams(
                message=f"Which room for “{meeting}”?", requested_schema=Room.model_json_schema()
            )
            return InputRequiredResult(input_requests={"room": ElicitRequest(params=ask)})
        if answer.action == "accept" and answer.content:
            return f"{meeting} in {answer.content['room']}"
        return f"no room: {answer.action}"

    return server


def pre_2026(app: Any) -> Any:
    """The app, answering a 2026 request (`server/discover`) as a server of the older revision
    does: method not found. The client then shakes hands the older way."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or ())
        version = headers.get(b"mcp-protocol-version", b"").decode()
        if scope["type"] != "http" or not version or version in HANDSHAKE_PROTOCOL_VERSIONS:
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        error = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
        reply = {"jsonrpc": "2.0", "id": json.loads(body or b"{}").get("id"), "error": error}
        start = {"type": "http.response.start", "status": 200}
        start["headers"] = [(b"content-type", b"application/json")]
        await send(start)
        await send({"type": "http.response.body", "body": json.dumps(reply).encode()})

    return wrapped


@asynccontextmanager
async def desk_served(*, legacy: bool = False) -> AsyncIterator[tuple[Desk, str]]:
    """The desk on loopback: its state and its MCP endpoint's URL."""
    desk = Desk(legacy=legacy)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts
    desk.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = desk_server(desk).streamable_http_app()
    served = pre_2026(app) if legacy else app
    config = uvicorn.Config(served, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield desk, f"{desk.base}/mcp"
    finally:
        server.should_exit = True
        await task
        sock.close()
