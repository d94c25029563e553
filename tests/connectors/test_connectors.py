"""MCP connectors against a real MCP server (tests/servers/notes_server.py) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import types as mcp_types
from mcp.server.mcpserver import MCPServer

from palui.config import McpServerSettings
from palui.connectors import Backoff, ConnectorManager, McpConnector
from palui.connectors.content import outcome_text
from palui.domain import ConnectorState
from tests.toolkit import SERVERS

NOTES_SERVER = SERVERS / "notes_server.py"
FAST = Backoff(initial_s=0.05, factor=2.0, max_s=0.2)
BOUND_S = 20  # generous upper bound for anything that waits on a subprocess


def notes(**env: str) -> McpServerSettings:
    return McpServerSettings(command=sys.executable, args=(str(NOTES_SERVER),), env=env)


@pytest.fixture
async def make_connector() -> AsyncIterator[Callable[..., Any]]:
    """`await make_connector(settings, ...)`: a started connector, stopped after the test."""
    started: list[McpConnector] = []

    async def make(
        settings: McpServerSettings, *, slug: str = "notes", **kwargs: Any
    ) -> McpConnector:
        kwargs.setdefault("backoff", FAST)
        connector = McpConnector(slug, settings, **kwargs)
        started.append(connector)
        await connector.start()
        async with asyncio.timeout(BOUND_S):
            await connector.wait_settled()
        return connector

    yield make
    for connector in started:
        await connector.stop()


async def pid_of(connector: McpConnector) -> int:
    return int((await connector.call("pid", {})).text)


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_stdio_server_connects_and_lists_tools_with_schemas_and_annotations(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes())

    status = connector.status()
    assert connector.id == "mcp-notes"
    assert status.state is ConnectorState.CONNECTED
    assert status.error is None and status.trust == "untrusted"
    tools = {tool.name: tool for tool in connector.tools()}
    assert {"list_notes", "search_notes", "add_note", "delete_note", "slow_op"} <= set(tools)
    assert status.tool_count == len(tools)
    assert tools["list_notes"].annotations == {"readOnlyHint": True}
    assert tools["delete_note"].annotations == {"readOnlyHint": False, "destructiveHint": True}
    assert tools["add_note"].description == "Add a note; returns its id."
    schema = tools["add_note"].input_schema
    assert schema["type"] == "object" and set(schema["required"]) == {"title", "body"}


async def test_a_connector_over_an_in_process_server_lists_and_calls_its_tools(
    make_connector: Callable[..., Any],
) -> None:
    server = MCPServer("shelf")
    shelf: list[str] = []

    @server.tool(annotations=mcp_types.ToolAnnotations(read_only_hint=False))
    def shelve(book: str) -> str:
        """Put a book on the shelf."""
        shelf.append(book)
        return f"shelved {book}"

    def in_process(settings: McpServerSettings, on_closed: Callable[[], None]) -> MCPServer:
        return server

    settings = McpServerSettings(command="unused: the server runs in this process")
    connector = await make_connector(settings, slug="shelf", transport=in_process)

    assert connector.status().state is ConnectorState.CONNECTED
    [tool] = connector.tools()
    assert (tool.name, tool.description) == ("shelve", "Put a book on the shelf.")
    assert tool.annotations == {"readOnlyHint": False}
    assert tool.input_schema["required"] == ["book"]
    outcome = await connector.call("shelve", {"book": "Dune"})
    assert (outcome.text, outcome.is_error, shelf) == ("shelved Dune", False, ["Dune"])


async def test_call_returns_text_structured_content_and_binary_placeholders(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes())

    added = await connector.call("add_note", {"title": "milk", "body": "buy oat milk"})
    found = await connector.call("search_notes", {"query": "oat"})
    stats = await connector.call("stats", {})
    picture = await connector.call("picture", {})

    assert added.text == "added note 1" and not added.is_error
    assert found.text == "1: milk"
    assert '"count": 1' in stats.text
    assert picture.text.splitlines() == ["a picture", "[image/png, 899 B]"]


async def test_tool_error_and_unknown_tool_are_error_outcomes(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes())

    missing = await connector.call("delete_note", {"id": "42"})
    unknown = await connector.call("no_such_tool", {})

    assert missing.is_error and "no note with id 42" in missing.text
    assert unknown.is_error and "no_such_tool" in unknown.text


async def test_missing_command_errors_with_its_reason_and_other_servers_run() -> None:
    settings = {"notes": notes(), "ghost": McpServerSettings(command="no-such-mcp-server")}
    # The ghost's next try waits a minute: with FAST's 0.05-0.2 s it was trying again (state
    # "connecting") whenever the notes server took a while to start, and the read caught it.
    async with ConnectorManager(settings, backoff=Backoff(60, 2.0, 60)) as manager:
        statuses = {status.id: status for status in manager.statuses()}
        notes_connector = manager.get("mcp-notes")
        assert notes_connector is not None
        outcome = await notes_connector.call("list_notes", {})
        ghost = manager.get("mcp-ghost")
        assert ghost is not None
        ghost_outcome = await ghost.call("anything", {})

    assert statuses["mcp-notes"].state is ConnectorState.CONNECTED
    assert statuses["mcp-ghost"].state is ConnectorState.ERRORED
    assert statuses["mcp-ghost"].error == "command not found: no-such-mcp-server"
    assert statuses["mcp-ghost"].retry_in_s is not None
    assert outcome.text == "no notes"
    assert ghost_outcome.is_error
    assert ghost_outcome.text.startswith("mcp-ghost is not connected: ")
    assert "command not found" in ghost_outcome.text


async def test_server_that_exits_at_start_is_errored_and_retried(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes(NOTES_EXIT_CODE="1"), backoff=Backoff(0.05, 40, 2))
    first = connector.status()

    async with asyncio.timeout(BOUND_S):
        await connector.wait_for_state(ConnectorState.CONNECTING)  # it tries again by itself
        await connector.wait_for_state(ConnectorState.ERRORED)
    second = connector.status()

    assert first.error == second.error == "server exited during start-up"
    assert first.retry_in_s is not None and first.retry_in_s <= 0.05
    assert second.retry_in_s is not None and 1 < second.retry_in_s <= 2  # backing off


async def test_missing_working_directory_is_named(
    make_connector: Callable[..., Any], tmp_path: Path
) -> None:
    settings = notes().model_copy(update={"cwd": tmp_path / "gone"})

    connector = await make_connector(settings)

    assert connector.status().error == f"working directory not found: {tmp_path / 'gone'}"


async def test_killed_server_errors_then_reconnects_by_itself_with_its_notes(
    make_connector: Callable[..., Any], tmp_path: Path
) -> None:
    settings = notes(NOTES_FILE=str(tmp_path / "notes.json"))
    connector = await make_connector(settings, backoff=Backoff(0.5, 2, 1))
    await connector.call("add_note", {"title": "kept", "body": "survives a restart"})
    old_pid = await pid_of(connector)

    os.kill(old_pid, signal.SIGKILL)
    async with asyncio.timeout(BOUND_S):
        await connector.wait_for_state(ConnectorState.ERRORED)
        errored = connector.status()
        down = await connector.call("list_notes", {})
        await connector.wait_for_state(ConnectorState.CONNECTED)

    assert errored.error == "server exited"
    assert errored.retry_in_s is not None and 0 < errored.retry_in_s <= 0.5
    assert errored.tool_count == 0
    assert down.is_error and down.text == "mcp-notes is not connected: server exited"
    assert connector.status().tool_count == len(connector.tools()) > 0
    assert (await connector.call("list_notes", {})).text == "1: kept"
    assert await pid_of(connector) != old_pid


async def test_cancelled_call_ends_promptly_and_the_server_stops_it(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes())
    slow = asyncio.create_task(connector.call("slow_op", {"seconds": 30}))
    await asyncio.sleep(0)  # the request is handed to the transport ...
    assert (await connector.call("running_ops", {})).text == "1"  # ... and the server runs it

    started = time.monotonic()
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    elapsed = time.monotonic() - started

    assert elapsed < 1
    assert (await connector.call("running_ops", {})).text == "0"  # the SDK sent a cancel
    assert connector.state is ConnectorState.CONNECTED
    assert (await connector.call("list_notes", {})).text == "no notes"


async def test_call_past_its_timeout_raises_timeout_error_and_connector_stays_usable(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes().model_copy(update={"timeout_s": 0.3}))

    with pytest.raises(TimeoutError, match=r"mcp-notes__slow_op gave no answer within 0.3 s"):
        await connector.call("slow_op", {"seconds": 30})
    with pytest.raises(TimeoutError):
        await connector.call("slow_op", {"seconds": 30}, timeout_s=0.1)

    assert (await connector.call("running_ops", {})).text == "0"
    assert (await connector.call("slow_op", {"seconds": 0.01}, timeout_s=5)).text == "slept 0.01s"


@pytest.mark.parametrize("legacy", ["0", "1"], ids=["2026-protocol", "2025-protocol"])
async def test_tool_list_change_refreshes_tools_and_calls_back(
    make_connector: Callable[..., Any], legacy: str
) -> None:
    changed = asyncio.Event()
    seen: list[str] = []

    def on_tools_changed(connector_id: str) -> None:
        seen.append(connector_id)
        changed.set()

    connector = await make_connector(notes(NOTES_LEGACY=legacy), on_tools_changed=on_tools_changed)
    changed.clear()

    await connector.call("add_tool_later", {"name": "summarise"})
    async with asyncio.timeout(BOUND_S):
        await changed.wait()

    names = [tool.name for tool in connector.tools()]
    assert "summarise" in names
    assert set(seen) == {"mcp-notes"}
    assert (await connector.call("summarise", {})).text == "summarise works"


async def test_streamable_http_server_connects_calls_and_errors_when_gone(
    make_connector: Callable[..., Any],
) -> None:
    port = free_port()
    settings = McpServerSettings(
        url=f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer not-logged"}
    )
    connector = await make_connector(settings, slug="remote")
    refused = connector.status()
    server = await asyncio.create_subprocess_exec(
        sys.executable, str(NOTES_SERVER), "--http", str(port), stderr=asyncio.subprocess.DEVNULL
    )
    try:
        async with asyncio.timeout(BOUND_S):
            await connector.wait_for_state(ConnectorState.CONNECTED)  # retries until it listens
        added = await connector.call("add_note", {"title": "over", "body": "http"})
        listed = await connector.call("list_notes", {})
        server.kill()
        await server.wait()
        async with asyncio.timeout(BOUND_S):
            await connector.wait_for_state(ConnectorState.ERRORED)
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()

    assert refused.state is ConnectorState.ERRORED and refused.error == "connection refused"
    assert added.text == "added note 1" and listed.text == "1: over"
    assert connector.status().error in {"connection lost", "connection refused"}


async def test_server_printing_garbage_to_stdout_still_connects(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes(NOTES_NOISY="1"))

    assert connector.state is ConnectorState.CONNECTED
    assert (await connector.call("list_notes", {})).text == "no notes"


async def test_server_gets_only_a_minimal_environment_plus_its_own(
    make_connector: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PALUI_MODEL_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("LANG", "C.UTF-8")
    connector = await make_connector(notes(NOTES_TOKEN="for-the-server"))

    async def env(name: str) -> str:
        return (await connector.call("env_var", {"name": name})).text

    assert await env("PALUI_MODEL_API_KEY") == "<unset>"
    assert await env("NOTES_TOKEN") == "for-the-server"
    assert await env("LANG") == "C.UTF-8"
    assert await env("PATH") == os.environ["PATH"]


async def test_paused_connector_starts_nothing(make_connector: Callable[..., Any]) -> None:
    connector = await make_connector(McpServerSettings(command="no-such-mcp-server", paused=True))

    outcome = await connector.call("list_notes", {})

    assert connector.status().state is ConnectorState.PAUSED
    assert connector.status().error is None and connector.tools() == []
    assert outcome.is_error and outcome.text == "mcp-notes is not connected: it is paused"


async def test_stop_leaves_no_server_process_running() -> None:
    manager = ConnectorManager({"a": notes(), "b": notes(NOTES_LEGACY="1")}, backoff=FAST)
    await manager.start()
    pids = [await pid_of(connector) for connector in manager.connectors()]
    assert all(process_exists(pid) for pid in pids)

    await manager.stop()

    assert not any(process_exists(pid) for pid in pids)
    assert {status.state for status in manager.statuses()} == {ConnectorState.ERRORED}


async def test_stop_ends_a_pending_call_as_connection_lost(
    make_connector: Callable[..., Any],
) -> None:
    connector = await make_connector(notes())
    slow = asyncio.create_task(connector.call("slow_op", {"seconds": 30}))
    await asyncio.sleep(0)
    await connector.call("running_ops", {})

    await connector.stop()
    outcome = await slow

    assert outcome.is_error and "may or may not have run" in outcome.text


async def test_manager_start_does_not_wait_forever_for_a_mute_server() -> None:
    mute = McpServerSettings(command=sys.executable, args=("-c", "import sys; sys.stdin.read()"))
    manager = ConnectorManager({"mute": mute}, start_timeout_s=0.5)

    started = time.monotonic()
    async with manager:
        elapsed = time.monotonic() - started
        state = manager.statuses()[0].state

    assert elapsed < 2
    assert state is ConnectorState.CONNECTING  # still trying, in the background


def test_backoff_doubles_from_one_second_up_to_a_minute() -> None:
    backoff = Backoff()

    assert [backoff.delay(n) for n in (1, 2, 3, 4, 7, 8, 20)] == [1, 2, 4, 8, 60, 60, 60]


def test_result_without_text_shows_structured_content_audio_and_resources() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.AudioContent(type="audio", data="A" * 4096, mime_type="audio/wav"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="note://1", text="the body"),
            ),
            mcp_types.ResourceLink(type="resource_link", name="report", uri="file:///r.pdf"),
        ],
        structured_content={"ok": True},
        is_error=True,
    )

    outcome = outcome_text(result)

    assert outcome.is_error
    assert outcome.text.splitlines() == [
        "{",
        '  "ok": true',
        "}",
        "[audio/wav, 3 kB]",
        "[resource note://1]",
        "the body",
        "[resource link: report <file:///r.pdf>]",
    ]
