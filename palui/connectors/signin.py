"""Signing a remote connector in from the chat (`/connect`): the SDK's authorization-code flow
with PKCE, driven in the background while a person follows the link.

`SignIns.begin` builds a `GrantAuth` whose redirect handler hands the authorization address back
to the chat and whose callback handler waits for the browser's return — `/oauth/callback` of
Palui's HTTP server, or the address pasted into the chat (`complete`). The SDK checks the state
and the issuer and exchanges the code with the PKCE verifier; both live only in that flow, in
this process: a state is used once, and a sign-in not finished within 10 minutes is dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx2
from mcp.client.auth import AuthorizationCodeResult

from palui.connectors.connector import McpConnector
from palui.connectors.oauth import GrantAuth, SignInNeeded
from palui.domain import ConnectorState
from palui.errors import SignInRefused
from palui.logs import get_logger

log = get_logger(__name__)

SIGN_IN_TTL_S = 600.0
CONNECT_WAIT_S = 30.0
PROBE = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
PROBE_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}


@dataclass
class Pending:
    connector_id: str
    user_id: int
    expires_at: float
    answer: asyncio.Future[AuthorizationCodeResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass(frozen=True, slots=True)
class Started:
    """A sign-in under way: the address to open, and its end (the sentence to tell)."""

    link: str
    done: asyncio.Task[str]


class SignIns:
    def __init__(self) -> None:
        self._pending: dict[str, Pending] = {}
        self._tasks: set[asyncio.Task[str]] = set()

    async def begin(self, connector: McpConnector, user_id: int) -> Started:
        setup = connector.oauth
        if setup is None or connector.settings.url is None:
            raise SignInRefused(f"{connector.id} does not sign in with OAuth")
        link: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        states: list[str] = []

        async def redirect(url: str) -> None:
            state = _query(url).get("state", "")
            self._pending[state] = Pending(connector.id, user_id, time.monotonic() + SIGN_IN_TTL_S)
            states.append(state)
            link.set_result(url)

        async def callback() -> AuthorizationCodeResult:
            pending = self._pending[states[-1]]
            try:
                async with asyncio.timeout(SIGN_IN_TTL_S):
                    return await pending.answer
            finally:
                self._pending.pop(states[-1], None)

        auth = GrantAuth(
            connector.id,
            connector.settings,
            setup,
            redirect_handler=redirect,
            callback_handler=callback,
        )
        flow = asyncio.create_task(self._run(connector, auth), name=f"sign-in {connector.id}")
        self._tasks.add(flow)
        flow.add_done_callback(self._tasks.discard)
        waits: set[asyncio.Future[str]] = {link, flow}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if not link.done():
            link.cancel()
            raise SignInRefused(flow.result())
        return Started(link.result(), flow)

    def complete(self, query: Mapping[str, str], *, user_id: int | None = None) -> str | None:
        """The browser came back (or its address was pasted by `user_id`): None when taken,
        else why not. A state is taken once; an unknown or expired one changes nothing."""
        state = query.get("state", "")
        pending = self._pending.get(state)
        if pending is None or pending.answer.done() or time.monotonic() > pending.expires_at:
            return "This sign-in link is unknown, already used or expired. Send /connect again."
        if user_id is not None and user_id != pending.user_id:
            return "This sign-in was started by someone else."
        del self._pending[state]
        if "error" in query:
            pending.answer.set_exception(SignInRefused(f"the server said: {query['error']}"))
            return None
        pending.answer.set_result(
            AuthorizationCodeResult(
                code=query.get("code", ""), state=state, iss=query.get("iss") or None
            )
        )
        return None

    def waiting_for(self, user_id: int) -> bool:
        now = time.monotonic()
        return any(p.user_id == user_id and p.expires_at > now for p in self._pending.values())

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _run(self, connector: McpConnector, auth: GrantAuth) -> str:
        """The whole flow; the sentence for the chat (a failure is worded, never raised)."""
        assert connector.settings.url is not None
        try:
            async with httpx2.AsyncClient(auth=auth, timeout=30.0) as http:
                await http.post(connector.settings.url, json=PROBE, headers=PROBE_HEADERS)
        except (SignInRefused, SignInNeeded) as exc:
            return f"Signing in to {connector.id} failed: {exc}."
        except TimeoutError:
            return f"Signing in to {connector.id} timed out. Send /connect again."
        except Exception as exc:
            log.warning("sign_in_failed", connector=connector.id, error=type(exc).__name__)
            return f"Signing in to {connector.id} failed: {type(exc).__name__}: {exc}"
        if auth.context.current_tokens is None:
            return f"{connector.id} did not ask for a sign-in: nothing to do."
        identity = _identity(auth, connector)
        connector.retry_now()
        ended = (ConnectorState.CONNECTED, ConnectorState.ERRORED, ConnectorState.NEEDS_SIGN_IN)
        try:
            async with asyncio.timeout(CONNECT_WAIT_S):
                await connector.wait_for_state(ConnectorState.CONNECTING, *ended[:2])
                state = await connector.wait_for_state(*ended)
        except TimeoutError:
            state = connector.state
        if state is ConnectorState.CONNECTED:
            return f"✅ {connector.id} connected: {len(connector.tools())} tools ({identity})."
        return f"Signed in to {connector.id} ({identity}), but it is {connector.status().error}."


def _identity(auth: GrantAuth, connector: McpConnector) -> str:
    """Which client identity the sign-in used, in words."""
    client = auth.context.client_info
    setup = connector.oauth
    document = setup.client_document_url() if setup is not None else None
    if client is not None and document is not None and client.client_id == document:
        return "as Palui's client metadata document"
    if client is not None and client.client_id == connector.settings.client_id:
        return "with the configured client_id"
    why = "" if document else "; PALUI_WEB_URL is not https, so no client metadata document"
    return f"registered dynamically{why}"


def _query(url: str) -> dict[str, str]:
    return dict(httpx2.URL(url).params)
