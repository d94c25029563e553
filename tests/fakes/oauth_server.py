"""A fake OAuth authorization server (aiohttp, loopback) and a protected MCP server beside it.

`AuthServer` publishes RFC 8414 metadata, registers clients dynamically (or accepts a client
metadata document's URL as the client id when `metadata_documents` is on), answers
`/authorize` at once with a redirect (the person "approves" when the test's browser follows the
link), checks PKCE, the redirect URI and the resource at `/token`, rotates refresh tokens
(a used one is dead), revokes, and counts what it saw. `protected_mcp` is a streamable-HTTP
MCP server built with the SDK's server side, whose token verifier asks `AuthServer` which tokens
are live, served by uvicorn in the test's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import urlencode

import uvicorn
from aiohttp import web
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult
from pydantic import BaseModel, Field


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Issued:
    client_id: str
    resource: str | None
    expires_at: float


@dataclass
class AuthServer:
    """State and routes of the fake authorization server."""

    resource: str = ""  # the protected server's URL, tokens must be asked for it
    metadata_documents: bool = False
    access_ttl_s: int = 3600
    url: str = ""
    clients: dict[str, list[str]] = field(default_factory=dict)  # id -> redirect URIs
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    access: dict[str, Issued] = field(default_factory=dict)
    refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> client id
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    refreshes: int = 0
    revoked: list[str] = field(default_factory=list)
    bearers_seen: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/oauth-authorization-server", self._metadata)
        app.router.add_post("/register", self._register)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        app.router.add_post("/revoke", self._revoke)
        return app

    def live(self, token: str) -> Issued | None:
        issued = self.access.get(token)
        if issued is None or issued.expires_at < time.time():
            return None
        return issued

    def expire_access_tokens(self) -> None:
        for issued in self.access.values():
            issued.expires_at = 0

    def revoke_refresh_tokens(self) -> None:
        self.refresh.clear()

    async def _metadata(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "registration_endpoint": f"{self.url}/register",
                "revocation_endpoint": f"{self.url}/revoke",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "client_id_metadata_document_supported": self.metadata_documents,
                "authorization_response_iss_parameter_supported": True,
            }
        )

    async def _register(self, request: web.Request) -> web.Response:
        body = await request.json()
        client_id = f"dyn-{secrets.token_hex(4)}"
        self.clients[client_id] = list(body.get("redirect_uris") or [])
        return web.json_response(
            {**body, "client_id": client_id, "token_endpoint_auth_method": "none"}, status=201
        )

    async def _authorize(self, request: web.Request) -> web.Response:
        q = dict(request.query)
        self.authorize_requests.append(q)
        client_id, redirect = q.get("client_id", ""), q.get("redirect_uri", "")
        known = self.clients.get(client_id)
        if known is None and not (self.metadata_documents and client_id.startswith("https://")):
            return web.Response(status=400, text="unknown client")
        if known is not None and redirect not in known:
            return web.Response(status=400, text="redirect_uri not registered")
        code = secrets.token_urlsafe(16)
        self.codes[code] = q
        answer = {"code": code, "state": q.get("state", ""), "iss": self.url}
        raise web.HTTPFound(f"{redirect}?{urlencode(answer)}")

    async def _token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.token_requests.append({k: str(v) for k, v in form.items()})
        if form.get("grant_type") == "authorization_code":
            asked = self.codes.pop(str(form.get("code")), None)
            if asked is None or asked.get("redirect_uri") != form.get("redirect_uri"):
                return web.json_response({"error": "invalid_grant"}, status=400)
            digest = hashlib.sha256(str(form.get("code_verifier")).encode()).digest()
            if base64.urlsafe_b64encode(digest).decode().rstrip("=") != asked["code_challenge"]:
                return web.json_response({"error": "invalid_grant"}, status=400)
            return self._issue(asked["client_id"], asked.get("resource"))
        if form.get("grant_type") == "refresh_token":
            client_id = self.refresh.pop(str(form.get("refresh_token")), None)
            if client_id is None:
                return web.json_response({"error": "invalid_grant"}, status=400)
            self.refreshes += 1
            return self._issue(client_id, str(form.get("resource") or "") or None)
        return web.json_response({"error": "unsupported_grant_type"}, status=400)

    async def _revoke(self, request: web.Request) -> web.Response:
        form = await request.post()
        token = str(form.get("token"))
        self.revoked.append(token)
        self.refresh.pop(token, None)
        self.access.pop(token, None)
        return web.Response(status=200)

    def _issue(self, client_id: str, resource: str | None) -> web.Response:
        access, refresh = f"at-{secrets.token_hex(16)}", f"rt-{secrets.token_hex(16)}"
        self.access[access] = Issued(client_id, resource, time.time() + self.access_ttl_s)
        self.refresh[refresh] = client_id
        return web.json_response(
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": self.access_ttl_s,
                "refresh_token": refresh,
            }
        )


class Verifier:
    def __init__(self, auth: AuthServer) -> None:
        self._auth = auth

    async def verify_token(self, token: str) -> AccessToken | None:
        issued = self._auth.live(token)
        if issued is None:
            return None
        self._auth.bearers_seen.append(token)
        return AccessToken(
            token=token, client_id=issued.client_id, scopes=[], resource=issued.resource
        )


class Project(BaseModel):
    project: str = Field(json_schema_extra={"enum": ["alpha", "beta"]})


class Plan(BaseModel):
    when: str = Field(title="When")
    hours: int = Field(title="Hours")
    urgent: bool = Field(title="Urgent")


def tracker_server(auth: AuthServer, url: str) -> MCPServer:
    server = MCPServer(
        "tracker",
        token_verifier=Verifier(auth),
        auth=AuthSettings(
            issuer_url=auth.url, resource_server_url=url, validate_token_resource=True
        ),
    )

    @server.tool()
    def list_issues() -> str:
        """List the open issues."""
        return "1: login broken"

    @server.tool()
    async def file_issue(title: str, ctx: Context) -> str | InputRequiredResult:
        """File an issue in a project the person picks (a question in the 2026 protocol's
        input-required round trip)."""
        answer = (ctx.input_responses or {}).get("project")
        if not isinstance(answer, ElicitResult):
            ask = ElicitRequestFormParams(
                message=f"Which project should “{title}” go to?",
                requested_schema=Project.model_json_schema(),
            )
            return InputRequiredResult(input_requests={"project": ElicitRequest(params=ask)})
        if answer.action == "accept" and answer.content:
            return f"filed “{title}” in {answer.content['project']}"
        return f"not filed: {answer.action}"

    @server.tool()
    def trace_context(ctx: Context) -> str:
        """The W3C trace context the request carried (none: "-")."""
        meta = ctx.request_context.meta
        found = meta.get("traceparent") if isinstance(meta, dict) else None
        return str(found or getattr(meta, "traceparent", None) or "-")

    @server.tool()
    async def deploy(ctx: Context) -> str:
        """Deploy, reporting progress along the way."""
        for done in (0, 20, 40, 60, 80):
            await ctx.report_progress(done, 100)
            await asyncio.sleep(0.3)
        return "deployed"

    @server.tool()
    async def plan_release(name: str, ctx: Context) -> str | InputRequiredResult:
        """Plan a release with a form of three fields (two typed, one a boolean)."""
        answer = (ctx.input_responses or {}).get("plan")
        if not isinstance(answer, ElicitResult):
            ask = ElicitRequestFormParams(
                message=f"How should {name} go out?", requested_schema=Plan.model_json_schema()
            )
            return InputRequiredResult(input_requests={"plan": ElicitRequest(params=ask)})
        if answer.action == "accept" and answer.content:
            got = answer.content
            return f"{name}: {got['when']}, {got['hours']} h, urgent={got['urgent']}"
        return f"not planned: {answer.action}"

    return server


@asynccontextmanager
async def oauth_servers(
    *, metadata_documents: bool = False, access_ttl_s: int = 3600
) -> AsyncIterator[tuple[AuthServer, str]]:
    """The authorization server and the protected MCP server, both on loopback: the first and
    the MCP endpoint's URL."""
    auth = AuthServer(metadata_documents=metadata_documents, access_ttl_s=access_ttl_s)
    runner = web.AppRunner(auth.app())
    await runner.setup()
    auth_port = free_port()
    # Bound and listening before uvicorn starts: a connection waits in the backlog until it
    # accepts, so nothing has to wait for uvicorn's start.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    mcp_port = int(sock.getsockname()[1])
    site = web.TCPSite(runner, "127.0.0.1", auth_port)
    await site.start()
    auth.url = f"http://127.0.0.1:{auth_port}"
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    auth.resource = mcp_url
    app = tracker_server(auth, mcp_url).streamable_http_app()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=mcp_port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield auth, mcp_url
    finally:
        server.should_exit = True
        await task
        sock.close()
        await runner.cleanup()
