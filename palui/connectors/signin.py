"""Signing a remote connector in from the chat (`/connect`): the SDK's authorization-code flow
with PKCE, driven in the background while a person follows the link.

`SignIns.begin` builds a `GrantAuth` whose redirect handler hands the authorization address back
to the chat and whose callback handler waits for the browser's return — `/oauth/callback` of
Palui's HTTP server, or the address pasted into the chat (`complete`). With several processes
on one database the return may reach any of them, so each sign-in is a row (`SignInRows`,
palui/db/sign_ins.py) keyed by a hash of its state: the process the return reaches records the
answer there (once, while the state is live: 10 minutes), and the process running the flow takes
it — at once when it recorded it itself, else on its next look (`LOOK_S`).

The SDK checks the state and the issuer and exchanges the code with the PKCE verifier. The
verifier is a local of the SDK's flow (`_perform_authorization_code_grant`): no hook hands it
out, so it never leaves that flow and the exchange is done by the process that began it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

import httpx2
from mcp.client.auth import AuthorizationCodeResult

from palui.connectors.connector import McpConnector
from palui.connectors.oauth import GrantAuth, SignInNeeded
from palui.domain import ConnectorState
from palui.errors import SignInRefused
from palui.logs import get_logger

log = get_logger(__name__)

SIGN_IN_TTL_S = 600.0
LOOK_S = 0.5  # how often a flow looks for a return another process recorded
CONNECT_WAIT_S = 30.0
PROBE = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
PROBE_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}
UNKNOWN_STATE = "This sign-in link is unknown, already used or expired. Send /connect again."
SOMEONE_ELSES = "This sign-in was started by someone else."


class SignInRows(Protocol):
    """Where sign-ins under way are kept (palui/db/sign_ins.py; the answer sealed there)."""

    async def add(
        self, state: str, connector_id: str, user_id: int, now: datetime, expires_at: datetime
    ) -> None: ...

    async def answer(
        self, state: str, answer: str, now: datetime, *, user_id: int | None = None
    ) -> bool: ...

    async def started_by(self, state: str, now: datetime) -> int | None: ...

    async def take(self, state: str) -> str | None: ...

    async def drop(self, state: str) -> None: ...

    async def waiting_for(self, user_id: int, now: datetime) -> bool: ...


@dataclass(frozen=True, slots=True)
class Started:
    """A sign-in under way: the address to open, and its end (the sentence to tell)."""

    link: str
    done: asyncio.Task[str]


class SignIns:
    def __init__(self, rows: SignInRows, now: Callable[[], datetime] | None = None) -> None:
        self._rows = rows
        self._now = now or (lambda: datetime.now(UTC))
        # The states this process's flows wait on: a return recorded here wakes its flow at once.
        self._arrived: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[str]] = set()

    async def begin(self, connector: McpConnector, user_id: int) -> Started:
        setup = connector.oauth
        if setup is None or connector.settings.url is None:
            raise SignInRefused(f"{connector.id} does not sign in with OAuth")
        link: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        states: list[str] = []

        async def redirect(url: str) -> None:
            state = _query(url).get("state", "")
            now = self._now()
            expires = now + timedelta(seconds=SIGN_IN_TTL_S)
            await self._rows.add(state, connector.id, user_id, now, expires)
            states.append(state)
            self._arrived[state] = asyncio.Event()
            link.set_result(url)

        async def callback() -> AuthorizationCodeResult:
            state = states[-1]
            try:
                async with asyncio.timeout(SIGN_IN_TTL_S):
                    answer = json.loads(await self._answer_of(state))
            finally:
                self._arrived.pop(state, None)
                with contextlib.suppress(Exception):  # else it expires unused
                    await self._rows.drop(state)
            if answer.get("error"):
                raise SignInRefused(f"the server said: {answer['error']}")
            return AuthorizationCodeResult(
                code=answer.get("code") or "", state=state, iss=answer.get("iss") or None
            )

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

    async def _answer_of(self, state: str) -> str:
        """The return's answer, recorded in this process or another."""
        arrived = self._arrived[state]
        while True:
            answer = await self._rows.take(state)
            if answer is not None:
                return answer
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LOOK_S):
                    await arrived.wait()
            arrived.clear()

    async def complete(self, query: Mapping[str, str], *, user_id: int | None = None) -> str | None:
        """The browser came back (or its address was pasted by `user_id`): None when taken,
        else why not. A state is taken once; an unknown or expired one changes nothing."""
        state = query.get("state", "")
        answer = {"code": query.get("code"), "iss": query.get("iss"), "error": query.get("error")}
        now = self._now()
        if not state or not await self._rows.answer(
            state, json.dumps(answer), now, user_id=user_id
        ):
            owner = await self._rows.started_by(state, now) if user_id is not None else None
            return SOMEONE_ELSES if owner is not None and owner != user_id else UNKNOWN_STATE
        if (arrived := self._arrived.get(state)) is not None:
            arrived.set()  # the flow is this process's: no need to wait for its next look
        return None

    async def expects(self, query: Mapping[str, str], user_id: int) -> bool:
        """Whether a pasted callback address is one to take (or refuse) here: this person has
        a sign-in under way, or its state is of one (someone else's: refused, never a turn's
        message), in any process."""
        now = self._now()
        if await self._rows.waiting_for(user_id, now):
            return True
        return await self._rows.started_by(query.get("state", ""), now) is not None

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
