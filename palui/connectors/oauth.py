"""OAuth for a remote connector, on the MCP SDK's own client (`mcp.client.auth`).

The SDK's `OAuthClientProvider` does discovery (protected-resource and authorization-server
metadata, the issuer checked), the client's identity (a client metadata document, a stored or
configured registration, else dynamic registration), PKCE with the resource indicator, and the
token exchange. Palui adds what a daemon with several processes needs (`GrantAuth`):

- tokens live in the database, sealed (`GrantStore`, implemented by `palui.db.oauth`), with
  their absolute expiry, so a restart knows when to refresh;
- a refresh happens before expiry and under the grant's lease: two processes holding the same
  rotating refresh token don't both spend it; the one without the lease waits and reads what
  the other stored;
- a connection never waits for a person: where the SDK would send someone to sign in, the
  connector's provider raises `SignInNeeded`, and the connector shows "needs sign-in" until
  `/connect` (palui/connectors/signin.py) signs it in.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl, ValidationError

from palui.config import McpServerSettings

REFRESH_MARGIN_S = 60.0  # refresh this long before the access token expires
REFRESH_LEASE = timedelta(seconds=30)
REFRESH_WAIT_S = 30.0  # how long a process waits for another's refresh
REFRESH_LOOK_S = 0.25  # how often it looks meanwhile (another process: no event to wait on)
CALLBACK_PATH = "/oauth/callback"
CLIENT_DOCUMENT_PATH = "/oauth/client.json"


class GrantStore(Protocol):
    """Where a connector's grant is kept (sealed at rest by the implementation)."""

    async def tokens(self, connector_id: str) -> str | None: ...

    async def client(self, connector_id: str) -> str | None: ...

    async def save_tokens(self, connector_id: str, tokens: str, now: datetime) -> None: ...

    async def save_client(self, connector_id: str, client: str, now: datetime) -> None: ...

    async def take_refresh(
        self, connector_id: str, holder: str, now: datetime, ttl: timedelta
    ) -> bool: ...

    async def release_refresh(self, connector_id: str, holder: str) -> None: ...


class SignInNeeded(Exception):
    """The server wants a person to sign in; `lapsed`: a grant Palui held no longer works."""

    def __init__(self, lapsed: bool) -> None:
        super().__init__("needs sign-in")
        self.lapsed = lapsed


@dataclass(frozen=True, slots=True)
class OAuthSetup:
    """What every OAuth connector of this Palui shares: where grants are kept, where the
    browser comes back to, and this process's name for the refresh lease."""

    grants: GrantStore
    web_base: Callable[[], str]  # PALUI_WEB_URL, else the HTTP server's address
    holder: str

    def redirect_uri(self) -> str:
        return f"{self.web_base().rstrip('/')}{CALLBACK_PATH}"

    def client_document_url(self) -> str | None:
        """The client metadata document's URL; only an https one may be a client id."""
        base = self.web_base().rstrip("/")
        return f"{base}{CLIENT_DOCUMENT_PATH}" if base.startswith("https://") else None

    def client_metadata(self, settings: McpServerSettings) -> OAuthClientMetadata:
        return OAuthClientMetadata(
            redirect_uris=[AnyUrl(self.redirect_uri())],
            client_name="Palui",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=settings.scopes,
        )

    def client_document(self) -> dict[str, object] | None:
        url = self.client_document_url()
        if url is None:
            return None
        return {
            "client_id": url,
            "client_name": "Palui",
            "redirect_uris": [self.redirect_uri()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }


class StoredGrant:
    """The SDK's `TokenStorage` over one connector's row: tokens with their absolute expiry."""

    def __init__(self, connector_id: str, settings: McpServerSettings, setup: OAuthSetup) -> None:
        self._id = connector_id
        self._settings = settings
        self._setup = setup
        self.expires_at: float | None = None
        self.loaded_any = False
        # Where the tokens came from (the authorization server's and the resource's metadata):
        # a refresh after a restart must go to the same token endpoint, for the same resource.
        self.context: OAuthContext | None = None
        self.metadata: dict[str, object] = {}

    async def get_tokens(self) -> OAuthToken | None:
        raw = await self._setup.grants.tokens(self._id)
        if raw is None:
            return None
        try:
            stored = json.loads(raw)
            token = OAuthToken.model_validate(stored["token"])
        except (ValueError, KeyError, ValidationError):
            return None
        self.expires_at = stored.get("expires_at")
        self.metadata = stored.get("metadata") or {}
        self.loaded_any = True
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self.expires_at = expires_at
        metadata = self.metadata
        if self.context is not None and self.context.oauth_metadata is not None:
            prm = self.context.protected_resource_metadata
            metadata = {
                "server": self.context.oauth_metadata.model_dump(mode="json", exclude_none=True),
                "resource": prm.model_dump(mode="json", exclude_none=True) if prm else None,
            }
        stored = {
            "token": tokens.model_dump(mode="json"),
            "expires_at": expires_at,
            "metadata": metadata,
        }
        raw = json.dumps(stored)
        await self._setup.grants.save_tokens(self._id, raw, _now())

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = await self._setup.grants.client(self._id)
        if raw is not None:
            try:
                client = OAuthClientInformationFull.model_validate_json(raw)
            except ValidationError:
                client = None
            if client is not None and _fits(client, self._setup):
                return client
        if self._settings.client_id:  # registered by hand at the server
            return OAuthClientInformationFull(
                client_id=self._settings.client_id,
                redirect_uris=[AnyUrl(self._setup.redirect_uri())],
                token_endpoint_auth_method="none",
            )
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._setup.grants.save_client(self._id, client_info.model_dump_json(), _now())


def _fits(client: OAuthClientInformationFull, setup: OAuthSetup) -> bool:
    """A stored registration is reused only for the redirect URI Palui uses now."""
    return [str(u) for u in client.redirect_uris or ()] == [setup.redirect_uri()]


RedirectHandler = Callable[[str], Awaitable[None]]
CallbackHandler = Callable[[], Awaitable[AuthorizationCodeResult]]


class GrantAuth(OAuthClientProvider):
    """The SDK's provider, with tokens refreshed before expiry under the grant's lease."""

    def __init__(
        self,
        connector_id: str,
        settings: McpServerSettings,
        setup: OAuthSetup,
        *,
        redirect_handler: RedirectHandler | None = None,
        callback_handler: CallbackHandler | None = None,
    ) -> None:
        assert settings.url is not None
        self.connector_id = connector_id
        self.stored = StoredGrant(connector_id, settings, setup)
        self.on_needed: Callable[[SignInNeeded], None] | None = None
        self._setup = setup
        super().__init__(
            settings.url,
            setup.client_metadata(settings),
            self.stored,
            redirect_handler=redirect_handler or self._refuse_to_wait,
            callback_handler=callback_handler or self._no_callback,
            client_metadata_url=setup.client_document_url(),
        )
        self.stored.context = self.context

    async def _refuse_to_wait(self, authorization_url: str) -> None:
        needed = SignInNeeded(lapsed=self.stored.loaded_any)
        if self.on_needed is not None:
            self.on_needed(needed)  # a call's request may hide the exception from the session
        raise needed

    async def _no_callback(self) -> AuthorizationCodeResult:
        raise SignInNeeded(lapsed=self.stored.loaded_any)  # never reached: see _refuse_to_wait

    async def _initialize(self) -> None:
        await super()._initialize()
        self._restore()

    def _restore(self) -> None:
        self.context.token_expiry_time = self.stored.expires_at
        metadata = self.stored.metadata
        try:
            if self.context.oauth_metadata is None and metadata.get("server"):
                server = OAuthMetadata.model_validate(metadata["server"])
                self.context.oauth_metadata = server
                self.context.auth_server_url = str(server.issuer)
            if self.context.protected_resource_metadata is None and metadata.get("resource"):
                resource = ProtectedResourceMetadata.model_validate(metadata["resource"])
                self.context.protected_resource_metadata = resource
        except ValidationError:
            pass  # unreadable: discovered again on the next challenge

    def _due(self) -> bool:
        expiry = self.context.token_expiry_time
        return expiry is not None and time.time() >= expiry - REFRESH_MARGIN_S

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with self.context.lock:
            if not self._initialized:
                await self._initialize()
            if self._due() and self.context.can_refresh_token():
                sub, answer = self._leased_refresh(request, None), None
                while (step := await _next(sub, answer)) is not None:
                    answer = yield step
        # A 401 to a request that carried a token that was not due: the server dropped it
        # early (or another process rotated it). Refresh once under the lease, retry, and only
        # then let the SDK's flow see the answer (a second 401 ends in `SignInNeeded`).
        flow = super()._auth_flow(request)
        response: httpx2.Response | None = None
        retried = False
        while True:
            try:
                step = await flow.asend(response) if response is not None else await anext(flow)
            except StopAsyncIteration:
                return
            response = yield step
            sent = step.headers.get("authorization", "")
            if step is request and response.status_code == 401 and sent and not retried:
                retried = True
                if self.context.can_refresh_token():
                    rejected = sent.removeprefix("Bearer ")
                    async with self.context.lock:
                        sub, answer = self._leased_refresh(request, rejected), None
                        while (refresh := await _next(sub, answer)) is not None:
                            answer = yield refresh
                    if self.context.is_token_valid():
                        self._add_auth_header(request)
                        response = yield request

    def _stale(self, rejected: str | None) -> bool:
        tokens = self.context.current_tokens
        held = tokens.access_token if tokens is not None else None
        return self._due() or (rejected is not None and held == rejected)

    async def _leased_refresh(
        self, request: httpx2.Request, rejected: str | None
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Refresh once across processes: with the lease, unless another process already did."""
        grants, holder, cid = self._setup.grants, self._setup.holder, self.connector_id
        deadline = time.monotonic() + REFRESH_WAIT_S
        while not await grants.take_refresh(cid, holder, _now(), REFRESH_LEASE):
            if time.monotonic() > deadline:
                return  # the holder is stuck: the request goes out as it is
            await asyncio.sleep(REFRESH_LOOK_S)
            await self._reload()
            if not self._stale(rejected):
                return
        try:
            await self._reload()  # what the last holder stored
            if not self._stale(rejected) or not self.context.can_refresh_token():
                return
            self.context.protocol_version = request.headers.get("mcp-protocol-version")
            response = yield await self._refresh_token()
            # A refused refresh clears the tokens: the request then goes out without one, the
            # server answers 401, and the flow ends in `SignInNeeded` (lapsed).
            await self._handle_refresh_response(response)
        finally:
            await grants.release_refresh(cid, holder)

    async def _reload(self) -> None:
        self.context.current_tokens = await self.stored.get_tokens()
        self._restore()


def _now() -> datetime:
    return datetime.now(UTC)


async def _next(
    flow: AsyncGenerator[httpx2.Request, httpx2.Response], answer: httpx2.Response | None
) -> httpx2.Request | None:
    """A sub-flow's next request, given the answer to its last one; None once it is done."""
    try:
        return await flow.asend(answer) if answer is not None else await anext(flow)
    except StopAsyncIteration:
        return None


async def revoke_grant(connector_id: str, settings: McpServerSettings, setup: OAuthSetup) -> bool:
    """Revoke the stored tokens at the authorization server (RFC 7009) where it offers that;
    whether it said yes. Best effort: the tokens are forgotten either way."""
    stored = StoredGrant(connector_id, settings, setup)
    token = await stored.get_tokens()
    client = await stored.get_client_info()
    server = stored.metadata.get("server")
    endpoint = server.get("revocation_endpoint") if isinstance(server, dict) else None
    if token is None or client is None or not isinstance(endpoint, str):
        return False
    revoked = True
    async with httpx2.AsyncClient(timeout=10.0) as http:
        for value, kind in ((token.refresh_token, "refresh_token"), (token.access_token, None)):
            if value is None:
                continue
            form = {"token": value, "client_id": client.client_id}
            if kind is not None:
                form["token_type_hint"] = kind
            try:
                response = await http.post(endpoint, data=form)
            except httpx2.HTTPError:
                return False
            revoked = revoked and response.status_code == 200
    return revoked
