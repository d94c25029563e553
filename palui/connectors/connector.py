"""One MCP server as a toolset.

A supervising task owns the MCP session from open to close (the SDK's transports and sessions are
anyio task groups and cancel scopes, which must be entered and left in one task), keeps the tool
list fresh, and reconnects with back-off when the server fails to start, dies or drops the
connection. Tool calls come from other tasks and go through the same session: the SDK's request
path only writes to a stream and waits for the answer, so that is safe, and cancelling a caller
sends the server a `notifications/cancelled` and leaves the session usable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import mcp.types as mcp_types
from mcp import Client
from mcp.client import IncomingMessage
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError

from palui.config import McpServerSettings
from palui.connectors.backoff import DEFAULT_BACKOFF, Backoff
from palui.connectors.content import ORIGIN_META
from palui.connectors.elicitation import Questions
from palui.connectors.listing import can_listen_for_tool_changes, list_all_tools
from palui.connectors.oauth import GrantAuth, OAuthSetup, SignInNeeded
from palui.connectors.rounds import Seed, continued_seed, run_call
from palui.connectors.transport import (
    OpenTransport,
    ServerTarget,
    client_info,
    describe_failure,
    open_transport,
)
from palui.domain import ConnectorState, ConnectorStatus, RemoteTool, ToolOutcome
from palui.domain.questions import StoredQuestion
from palui.logs import bound, get_logger
from palui.observe import traceparent

log = get_logger(__name__)

ToolsChanged = Callable[[str], Awaitable[None] | None]
Lapsed = Callable[[str], Awaitable[None]]

CONNECT_TIMEOUT_S = 15.0  # per request while connecting: the SDK waits forever on a mute server
# The SDK's stdio shutdown escalates stdin close -> SIGTERM -> SIGKILL within about 6 s.
STOP_TIMEOUT_S = 10.0


class McpConnector:
    """Connector `mcp-<slug>`: `start()` it, read `tools()` and `status()`, `call()` its tools.

    `on_tools_changed(connector_id)` (plain or async) runs whenever what `tools()` returns
    changes: on connecting, on losing the connection, and when the server's list changes.
    `transport` says how each connection attempt reaches the server: stdio or streamable HTTP
    from `settings` unless given (a test may hand it an in-process server).
    """

    def __init__(
        self,
        slug: str,
        settings: McpServerSettings,
        *,
        backoff: Backoff = DEFAULT_BACKOFF,
        on_tools_changed: ToolsChanged | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        connector_id: str | None = None,
        transport: OpenTransport = open_transport,
        oauth: OAuthSetup | None = None,
        on_lapsed: Lapsed | None = None,
        questions: Questions | None = None,
    ) -> None:
        self.id = connector_id or f"mcp-{slug}"
        self.settings = settings
        self.trust = settings.trust
        self._backoff = backoff
        self._on_tools_changed = on_tools_changed
        self._connect_timeout_s = connect_timeout_s
        self._open_transport = transport
        # An OAuth server's grant (`/connect`), when a person may sign this one in.
        self._oauth = oauth if oauth is not None and settings.may_sign_in else None
        self._on_lapsed = on_lapsed
        self._questions = questions  # a server's questions during a call, asked in the chat
        self._auth: GrantAuth | None = None
        self._sign_in: SignInNeeded | None = None
        self._retry = asyncio.Event()  # set by `retry_now`: a sign-in finished
        self._state = ConnectorState.PAUSED if settings.paused else ConnectorState.CONNECTING
        self._error: str | None = None
        self._retry_at: float | None = None
        self._tools: tuple[RemoteTool, ...] = ()
        self._client: Client | None = None
        self._failures = 0
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._changed = asyncio.Event()  # replaced on every state change
        self._settled = asyncio.Event()  # set once the first attempt has connected or failed
        # Per connection, replaced by each attempt:
        self._lost = asyncio.Event()
        self._lost_reason: str | None = None
        self._refresh_wanted = asyncio.Event()
        self._bad_messages = 0

    # -- reading ----------------------------------------------------------------------------

    @property
    def state(self) -> ConnectorState:
        return self._state

    @property
    def oauth(self) -> OAuthSetup | None:
        """How this connector signs in with OAuth; None: it does not."""
        return self._oauth

    def retry_now(self) -> None:
        """Connect again at once, with the grant as stored now (after a sign-in or sign-out)."""
        self._auth = None
        self._retry.set()  # each attempt clears it: one made after this call reads the grant
        if self._state is ConnectorState.CONNECTED:
            self._mark_lost("signed in again")

    def tools(self) -> list[RemoteTool]:
        return list(self._tools) if self._state is ConnectorState.CONNECTED else []

    def status(self) -> ConnectorStatus:
        retry_in_s = None
        if self._state is ConnectorState.ERRORED and self._retry_at is not None:
            retry_in_s = round(max(0.0, self._retry_at - time.monotonic()), 1)
        return ConnectorStatus(
            id=self.id,
            state=self._state,
            tool_count=len(self.tools()),
            error=self._error,
            retry_in_s=retry_in_s,
            trust=self.trust,
        )

    async def wait_settled(self) -> None:
        """Return once the first attempt has connected or failed (at once when paused)."""
        await self._settled.wait()

    async def wait_for_state(self, *states: ConnectorState) -> ConnectorState:
        while self._state not in states:
            changed = self._changed
            await changed.wait()
        return self._state

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self.settings.paused:
            self._settled.set()
            return
        if self._task is not None:
            return
        self._scope = anyio.CancelScope()
        self._task = asyncio.create_task(self._supervise(self._scope), name=f"connector {self.id}")

    async def stop(self) -> None:
        task, scope = self._task, self._scope
        if task is None or scope is None:
            return
        scope.cancel()  # an anyio cancel, so the SDK's shielded process shutdown runs to the end
        done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
        if not done:
            log.warning("connector_stop_slow", connector=self.id, waited_s=STOP_TIMEOUT_S)
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("connector_supervisor_failed", connector=self.id, error=repr(exc))
        self._task = self._scope = self._retry_at = None
        self._client = None
        self._tools = ()
        self._set_state(ConnectorState.ERRORED, "stopped")
        log.info("connector_stopped", connector=self.id)

    # -- calls ------------------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout_s: float | None = None,
        meta: mcp_types.RequestParamsMeta | None = None,
        seed: Seed | None = None,
    ) -> ToolOutcome:
        """Run one tool. Server-side failures come back as error outcomes; a timeout raises
        TimeoutError (the action may have happened); cancellation propagates."""
        client = self._client
        if client is None or self._state is not ConnectorState.CONNECTED:
            return ToolOutcome(f"{self.id} is not connected: {self._why_not_connected()}", True)
        limit = timeout_s if timeout_s is not None else self.settings.timeout_s
        if self.settings.url and (context := traceparent()) is not None:
            # The call's trace goes on at the server (W3C trace context in the request's _meta).
            meta = cast(mcp_types.RequestParamsMeta, {**(meta or {}), "traceparent": context})
        questions = self._questions
        note = questions.progress_note(f"{self.id}__{tool}") if questions else None
        call = functools.partial(run_call, client, self.id, questions, tool, arguments)
        try:
            return await call(limit=limit, meta=meta, seed=seed, progress=note)
        finally:
            if note is not None:
                await note.close()

    async def continue_question(self, stored: StoredQuestion) -> ToolOutcome | None:
        """A call whose question was answered after a restart, continued from its round."""
        found = await continued_seed(self.id, self._questions, stored) if self._questions else None
        if found is None:
            return None
        round_, seed = found
        outcome = await self.call(round_.tool, round_.arguments, seed=seed)
        return dataclasses.replace(outcome, untrusted=True)  # it carries the server's words

    async def call_with_origin(
        self, tool: str, arguments: dict[str, Any], origin: str
    ) -> ToolOutcome:
        """A call whose content may come from `origin` (untrusted): the server reads it from the
        request's `_meta` (the bundled recall stores it with the memory)."""
        meta = cast(mcp_types.RequestParamsMeta, {ORIGIN_META: origin})
        return await self.call(tool, arguments, meta=meta)

    def _why_not_connected(self) -> str:
        if self._state is ConnectorState.PAUSED:
            return "it is paused"
        if self._state is ConnectorState.CONNECTING:
            return f"still connecting (last error: {self._error})" if self._error else "connecting"
        return self._error or "not started"

    # -- the supervising task ---------------------------------------------------------------

    async def _supervise(self, scope: anyio.CancelScope) -> None:
        with scope, bound(connector=self.id):  # its server's stderr lines say whose they are
            while True:
                reason = await self._connect_once()
                was_connected = self._state is ConnectorState.CONNECTED
                if self._sign_in is not None:
                    await self._wait_for_sign_in(was_connected)
                    continue
                self._failures += 1
                delay = self._backoff.delay(self._failures)
                self._retry_at = time.monotonic() + delay
                self._tools = ()
                self._set_state(ConnectorState.ERRORED, reason)
                self._settled.set()
                log.warning("connector_errored", connector=self.id, reason=reason, retry_in_s=delay)
                if was_connected:
                    await self._publish_tools()
                await anyio.sleep(delay)
                self._set_state(ConnectorState.CONNECTING, self._error)

    async def _wait_for_sign_in(self, was_connected: bool) -> None:
        """No retries: only a person signing in (`retry_now`) can change the server's answer."""
        needed, self._sign_in = self._sign_in, None
        self._tools, self._retry_at, self._failures = (), None, 0
        self._set_state(ConnectorState.NEEDS_SIGN_IN, "needs sign-in")
        self._settled.set()
        log.info("connector_needs_sign_in", connector=self.id)
        if was_connected:
            await self._publish_tools()
        if needed is not None and needed.lapsed and self._on_lapsed is not None:
            try:
                await self._on_lapsed(self.id)
            except Exception as exc:
                log.error("connector_lapse_notice_failed", connector=self.id, error=repr(exc))
        self._auth = None  # a fresh provider reads the grant anew
        await self._retry.wait()
        self._set_state(ConnectorState.CONNECTING, None)

    def _needs_sign_in(self, needed: SignInNeeded) -> None:
        self._sign_in = needed
        self._mark_lost("needs sign-in")

    def _target(self, on_closed: Callable[[], None]) -> ServerTarget:
        if self._oauth is None:
            return self._open_transport(self.settings, on_closed)
        if self._auth is None:
            self._auth = GrantAuth(self.id, self.settings, self._oauth)
            self._auth.on_needed = self._needs_sign_in
        return open_transport(self.settings, on_closed, auth=self._auth)

    async def _connect_once(self) -> str:
        """One connection from open to loss; returns why it ended."""
        self._lost, self._lost_reason = asyncio.Event(), None
        self._refresh_wanted, self._bad_messages = asyncio.Event(), 0
        self._sign_in = None
        self._retry.clear()
        closed_reason = "server exited" if self.settings.command else "connection closed"
        target = self._target(lambda: self._mark_lost(closed_reason))
        client = Client(
            target,
            mode="auto",  # the 2026 protocol when the server speaks it, else the handshake
            cache=None,  # Palui keeps its own tool list
            read_timeout_seconds=self._connect_timeout_s,
            message_handler=self._on_message,
            client_info=client_info(),
            elicitation_callback=self._questions.asker(self.id) if self._questions else None,
        )
        try:
            async with client:
                self._tools = await list_all_tools(client)
                self._client = client
                connected_at = time.monotonic()
                self._set_state(ConnectorState.CONNECTED, None)
                self._settled.set()
                log.info(
                    "connector_connected",
                    connector=self.id,
                    tools=len(self._tools),
                    protocol=client.protocol_version,
                )
                await self._publish_tools()
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self._refresh_when_asked, client)
                    if can_listen_for_tool_changes(client):
                        tasks.start_soon(self._listen_for_changes, client)
                    await self._lost.wait()
                    tasks.cancel_scope.cancel()
                if time.monotonic() - connected_at >= self._backoff.max_s:
                    self._failures = 0  # it held for a while: start the back-off over
                return self._lost_reason or closed_reason
        except Exception as exc:
            return describe_failure(exc, self.settings)
        finally:
            self._client = None

    def _mark_lost(self, reason: str) -> None:
        if self._lost_reason is None:
            self._lost_reason = reason
        self._lost.set()

    async def _listen_for_changes(self, client: Client) -> None:
        """2026 protocol: list changes arrive on a `subscriptions/listen` stream."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                self._refresh_wanted.set()  # a change may have landed before the ack
                async for _event in subscription:
                    self._refresh_wanted.set()
        except SubscriptionLost:
            # Over HTTP this is often the first sign that the server is gone; reconnecting
            # also re-lists, which the spec asks for after a lost subscription.
            self._mark_lost("connection lost")
        except Exception as exc:  # refused or unsupported: live without change notices
            log.info("connector_listen_refused", connector=self.id, error=type(exc).__name__)

    async def _on_message(self, message: IncomingMessage) -> None:
        """Older protocol: list changes arrive as notifications, and a page the server asked the
        person to open is said to be done with. Also sees unreadable lines."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._refresh_wanted.set()
        elif isinstance(message, mcp_types.ElicitCompleteNotification) and self._questions:
            self._questions.completed(self.id, message.params.elicitation_id)
        elif isinstance(message, Exception):
            self._bad_messages += 1
            if self._bad_messages == 1:  # the content may hold anything: log only its kind
                log.warning(
                    "connector_bad_message", connector=self.id, error=type(message).__name__
                )

    async def _refresh_when_asked(self, client: Client) -> None:
        while True:
            await self._refresh_wanted.wait()
            self._refresh_wanted.clear()
            try:
                tools = await list_all_tools(client)
            except MCPError as exc:
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    return  # the supervisor hears of it and reconnects
                log.warning("connector_refresh_failed", connector=self.id, error=repr(exc))
                continue
            except Exception as exc:
                log.warning("connector_refresh_failed", connector=self.id, error=repr(exc))
                continue
            if tools != self._tools:
                self._tools = tools
                log.info("connector_tools_changed", connector=self.id, tools=len(tools))
                await self._publish_tools()

    async def _publish_tools(self) -> None:
        if self._on_tools_changed is None:
            return
        try:
            result = self._on_tools_changed(self.id)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            log.error("connector_tools_callback_failed", connector=self.id, error=repr(exc))

    def _set_state(self, state: ConnectorState, error: str | None) -> None:
        self._state, self._error = state, error
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
