"""How a connector reads in /status while it tries again after a failure."""

from __future__ import annotations

from palui.domain import ConnectorState, ConnectorStatus
from palui.interact.status import connector_line


def test_a_connector_trying_again_after_a_failure_still_shows_the_failure() -> None:
    retrying = ConnectorStatus("mcp-broken", ConnectorState.CONNECTING, error="command not found")
    assert connector_line(retrying) == (
        '⚠️ broken — not connected: "command not found" (retrying now)'
    )


def test_a_connector_connecting_for_the_first_time_says_so() -> None:
    first = ConnectorStatus("mcp-notes", ConnectorState.CONNECTING)
    assert connector_line(first) == "⏳ notes — connecting"
