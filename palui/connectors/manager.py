"""Every configured MCP server, started and stopped together."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType

from palui.config import McpServerSettings
from palui.connectors.backoff import DEFAULT_BACKOFF, Backoff
from palui.connectors.connector import CONNECT_TIMEOUT_S, Lapsed, McpConnector, ToolsChanged
from palui.connectors.elicitation import Questions
from palui.connectors.oauth import OAuthSetup
from palui.connectors.recall import RECALL_ID
from palui.connectors.transport import OpenTransport, open_transport
from palui.domain import ConnectorState, ConnectorStatus
from palui.logs import get_logger

log = get_logger(__name__)

START_TIMEOUT_S = 15.0  # one slow server must not hold up Palui's start


class ConnectorManager:
    """One `McpConnector` per `[mcp.<slug>]` section, and `recall` when memory is on.

    `transport` is how every connector reaches its server (stdio or streamable HTTP from its
    settings unless given; a test may hand it servers in its own process)."""

    def __init__(
        self,
        settings_mcp: Mapping[str, McpServerSettings],
        *,
        backoff: Backoff = DEFAULT_BACKOFF,
        on_tools_changed: ToolsChanged | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        recall: McpServerSettings | None = None,
        oauth: OAuthSetup | None = None,
        on_lapsed: Lapsed | None = None,
        transport: OpenTransport = open_transport,
    ) -> None:
        self._start_timeout_s = start_timeout_s
        self.questions = Questions()  # servers' questions during calls; bound to the chat
        self._connectors: dict[str, McpConnector] = {
            c.id: c
            for c in (
                McpConnector(
                    slug,
                    settings,
                    backoff=backoff,
                    on_tools_changed=on_tools_changed,
                    connect_timeout_s=connect_timeout_s,
                    oauth=oauth,
                    on_lapsed=on_lapsed,
                    questions=self.questions,
                    transport=transport,
                )
                for slug, settings in settings_mcp.items()
            )
        }
        if recall is not None:  # long-term memory: connector `recall` (DESIGN §1.7)
            self._connectors[RECALL_ID] = McpConnector(
                "recall",
                recall,
                backoff=backoff,
                on_tools_changed=on_tools_changed,
                connect_timeout_s=connect_timeout_s,
                connector_id=RECALL_ID,
                transport=transport,
            )

    def connectors(self) -> list[McpConnector]:
        return list(self._connectors.values())

    def get(self, connector_id: str) -> McpConnector | None:
        return self._connectors.get(connector_id)

    def statuses(self) -> list[ConnectorStatus]:
        return [c.status() for c in self._connectors.values()]

    async def start(self) -> None:
        """Start every connector; return once each has connected or failed its first attempt,
        or after the start timeout (the slow ones keep trying in the background)."""
        for connector in self._connectors.values():
            await connector.start()
        waits = [c.wait_settled() for c in self._connectors.values()]
        try:
            async with asyncio.timeout(self._start_timeout_s):
                await asyncio.gather(*waits)
        except TimeoutError:
            pending = [s.id for s in self.statuses() if s.state == ConnectorState.CONNECTING]
            log.warning("connectors_slow_to_start", pending=pending, waited_s=self._start_timeout_s)
        for status in self.statuses():
            log.info("connector_status", connector=status.id, state=str(status.state))

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self._connectors.values()))

    async def __aenter__(self) -> ConnectorManager:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
