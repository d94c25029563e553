"""Opening one MCP server's transport (stdio or streamable HTTP) and naming why it failed.

A connector reaches its server through an `OpenTransport`, called once per connection attempt;
`open_transport` (stdio or streamable HTTP, from the server's settings) is the one Palui runs
with, and a test may hand back an in-process server instead. The SDK's stdio transport reports a
server's death only by closing its read stream, which its session does not surface;
`open_transport` wraps that stream so the connector hears about it. A stdio server's stderr is
read line by line into Palui's log (`ServerStderr`), so its lines pass the same redactor as
Palui's own: a server that prints its API key on stderr does not print it into the log.
"""

from __future__ import annotations

import contextvars
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib import metadata
from typing import Any, Protocol

import anyio
import httpx2
from mcp.client import Transport
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT, Implementation
from pydantic import ValidationError

from palui.config import McpServerSettings
from palui.logs import get_logger

log = get_logger("palui.connectors.stderr")

# Besides the SDK's own minimal set (HOME, LOGNAME, PATH, SHELL, TERM, USER): locale and temp
# dir, so servers decode text and write scratch files as they would in a shell.
EXTRA_INHERITED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: SSE streams stay open
REASON_LIMIT = 200
STDERR_LINE_LIMIT = 2000  # a server's stderr line in the log, at most
STDERR_DRAIN_S = 2.0  # after the server is gone, how long its last lines may take to be logged

ServerTarget = Transport | Server[Any] | MCPServer
"""What `mcp.Client` connects to: a transport's streams, or a server in this process."""


class OpenTransport(Protocol):
    """How a connector reaches its server, once per connection attempt. `on_closed` must run
    when the server side goes away (an in-process server never does, and may ignore it)."""

    def __call__(
        self, settings: McpServerSettings, on_closed: Callable[[], None]
    ) -> ServerTarget: ...


def client_info() -> Implementation:
    try:
        version = metadata.version("palui")
    except metadata.PackageNotFoundError:
        version = "0"
    return Implementation(name="palui", version=version)


def stdio_parameters(settings: McpServerSettings) -> StdioServerParameters:
    assert settings.command is not None
    inherited = {k: v for k in EXTRA_INHERITED_ENV if (v := os.environ.get(k)) is not None}
    return StdioServerParameters(
        command=settings.command,
        args=list(settings.args),
        env=inherited | dict(settings.env),  # the SDK merges this over its minimal set
        cwd=settings.cwd,
    )


@asynccontextmanager
async def open_transport(
    settings: McpServerSettings, on_closed: Callable[[], None], *, auth: httpx2.Auth | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """The server's streams; `on_closed` runs once the server side has closed its stream.
    `auth` signs an HTTP server's requests (OAuth: palui/connectors/oauth.py)."""
    if settings.url:
        async with (
            httpx2.AsyncClient(
                headers=dict(settings.headers), timeout=HTTP_TIMEOUT, auth=auth
            ) as http,
            streamable_http_client(settings.url, http_client=http) as (read, write),
        ):
            yield ClosingWatch(read, on_closed), write
    else:
        stderr = ServerStderr()
        try:
            async with stdio_client(stdio_parameters(settings), errlog=stderr.file) as (
                read,
                write,
            ):
                stderr.spawned()
                yield ClosingWatch(read, on_closed), write
        finally:
            with anyio.CancelScope(shield=True):
                await stderr.finish()


class ServerStderr:
    """A pipe for one stdio server's stderr: the server writes its end, a thread logs each line
    as `mcp_server_stderr` (with the connector's id from the log context), redacted like every
    other line. A thread, not a task: it needs no event loop, and it lives as long as the pipe."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.file = os.fdopen(write_fd, "w")  # the SDK hands its file number to the process
        self._lines = os.fdopen(read_fd, "rb")
        self._finished = threading.Event()
        context = contextvars.copy_context()  # the connector's ids, bound in its task
        self._thread = threading.Thread(
            target=context.run, args=(self._pump,), name="mcp-stderr", daemon=True
        )
        self._thread.start()

    def spawned(self) -> None:
        """The server has its own copy of the write end: close ours, so its exit ends the pipe."""
        if not self.file.closed:
            self.file.close()

    async def finish(self) -> None:
        """The server is gone (or never started): log what it wrote last."""
        self.spawned()
        await anyio.to_thread.run_sync(self._thread.join, STDERR_DRAIN_S)
        # A pipe still open past the drain (a grandchild kept it, or the server outlived us):
        # the thread logs no more. Its lines would come after whoever owns the log (a test's
        # captured stream) closed it, as "--- Logging error ---" tracebacks.
        self._finished.set()

    def _pump(self) -> None:
        with self._lines:
            for raw in self._lines:
                if self._finished.is_set():
                    return
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    log.info("mcp_server_stderr", line=line[:STDERR_LINE_LIMIT])


class ClosingWatch:
    """A read stream that calls `on_closed` when it ends (end of stream or closed under us)."""

    def __init__(self, inner: Any, on_closed: Callable[[], None]) -> None:
        self._inner = inner
        self._on_closed = on_closed

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_closed()
            raise

    def __aiter__(self) -> ClosingWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> ClosingWatch:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        # e.g. `last_context`, which the SDK's dispatcher looks up on context-carrying streams
        return getattr(self._inner, name)


def describe_failure(exc: BaseException, settings: McpServerSettings) -> str:
    """A short reason a person can act on. Never includes headers, env values or the URL."""
    exc = _first_leaf(exc)
    if isinstance(exc, FileNotFoundError):
        if (
            settings.cwd is not None
            and exc.filename is not None
            and str(exc.filename) == str(settings.cwd)
        ):
            return f"working directory not found: {settings.cwd}"
        return f"command not found: {settings.command}"
    if isinstance(exc, PermissionError):
        return f"command not executable: {settings.command}"
    if isinstance(exc, httpx2.ConnectError):
        if _caused_by(exc, socket.gaierror):
            return "host not found"
        return "connection refused"
    if isinstance(exc, httpx2.TimeoutException):
        return "the server did not answer in time"
    if isinstance(exc, httpx2.ReadError | httpx2.WriteError | httpx2.RemoteProtocolError):
        return "connection lost"
    if isinstance(exc, httpx2.TransportError):
        return f"connection failed ({type(exc).__name__})"
    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            return "server exited during start-up" if settings.command else "connection closed"
        if exc.code == REQUEST_TIMEOUT:
            return "the server did not answer in time"
        return _short(f"server error: {exc.message}")
    if isinstance(exc, ValidationError):  # its text quotes the server's answer: keep it out
        return "the server sent a malformed answer"
    if isinstance(exc, TimeoutError):
        return "the server did not answer in time"
    if isinstance(exc, OSError):
        return _short(f"could not start {settings.command}: {exc.strerror or exc}")
    return _short(f"{type(exc).__name__}: {exc}")


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 1] + "…"
