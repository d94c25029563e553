"""The narrow way back into Palui from a sandboxed run: one Unix socket pair per run.

The sandbox holds one end (as an inherited file descriptor; it has no network and no path to
any other socket of Palui). Each request is a line of JSON, `{"tool": ..., "arguments": {...}}`,
and gets one line back, `{"text": ...}` or `{"error": ...}`. Palui side, `dispatch` decides
what may run (only built-in read tools, each through the turn's whole pipeline: hooks, guards,
policy, a call record); the bridge counts every request and refuses all past its limit,
whatever they ask.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from palui.domain import ToolOutcome
from palui.logs import get_logger

log = get_logger("palui.sandbox")

Dispatch = Callable[[str, dict[str, Any]], Awaitable[ToolOutcome]]

MAX_REQUEST_BYTES = 64 * 1024
MAX_REPLY_CHARS = 16_000


class Bridge:
    """One run's bridge. `sandbox_fd` goes to the sandbox; `serve` answers until it closes."""

    def __init__(self, dispatch: Dispatch, max_calls: int) -> None:
        self._dispatch = dispatch
        self._max_calls = max_calls
        self.calls = 0  # requests seen, refused ones included
        self._palui_end, self._sandbox_end = socket.socketpair()

    @property
    def sandbox_fd(self) -> int:
        return self._sandbox_end.fileno()

    def handed_over(self) -> None:
        """The sandbox has its end now: Palui's copy of it must go, or EOF never comes."""
        self._sandbox_end.close()

    async def serve(self) -> None:
        reader, writer = await asyncio.open_unix_connection(
            sock=self._palui_end, limit=MAX_REQUEST_BYTES
        )
        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # a line over the limit: the stream can't be trusted on
                    writer.write(_reply({"error": "the request is too long"}))
                    break
                if not line:
                    break
                writer.write(_reply(await self._answer(line)))
                await writer.drain()
        except (ConnectionError, BrokenPipeError):
            pass  # the run ended mid-reply
        finally:
            writer.close()

    async def _answer(self, line: bytes) -> dict[str, str]:
        self.calls += 1
        if self.calls > self._max_calls:
            return {
                "error": f"refused: a run may call Palui's tools at most {self._max_calls} times"
            }
        try:
            request = json.loads(line)
        except ValueError:
            return {"error": "the request is not JSON"}
        if not isinstance(request, dict):
            return {"error": "the request must be a JSON object"}
        tool, arguments = request.get("tool"), request.get("arguments") or {}
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            return {"error": "give the tool's name and its arguments as an object"}
        outcome = await self._dispatch(tool, arguments)
        log.info("sandbox_bridge_call", tool=tool, error=outcome.is_error, call=self.calls)
        text = outcome.text[:MAX_REPLY_CHARS]
        return {"error": text} if outcome.is_error else {"text": text}

    def close(self) -> None:
        self._palui_end.close()
        self._sandbox_end.close()


def _reply(message: dict[str, str]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"
