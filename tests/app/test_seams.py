"""The composition root's seams a test uses instead of patching a production class: the
transport the connectors reach their servers through (`Palui(settings, mcp_transport=...)`)."""

from __future__ import annotations

from typing import Any

from palui.domain import ConnectorState


async def test_the_connectors_reach_their_servers_through_the_transport_given(
    with_notes: Any, mcp_in_process: Any, start_palui: Any
) -> None:
    palui = await start_palui()
    await palui.app.serving.wait()
    assert "notes" in mcp_in_process.started  # built in this process, not spawned
    notes = palui.app.connectors.get("mcp-notes")
    assert notes is not None and notes.status().state is ConnectorState.CONNECTED
