"""Palui's built-in read tools, from code run by palui__run_code:

    import palui_tools
    print(palui_tools.call("palui__list_jobs", {}))

Each call goes over the bridge Palui opened for this run; Palui runs only its built-in tools
that are read, and refuses every call past the run's limit. A refusal raises `ToolError`.
"""

from __future__ import annotations

import io
import json
import socket
import threading
from typing import Any

__all__ = ["ToolError", "call"]


class ToolError(Exception):
    """Palui refused the call, or the tool answered with an error."""


# This run's end of the bridge, set once by the launcher (start.py) before the code runs.
_bridge: dict[str, io.BufferedRWPair] = {}
_lock = threading.Lock()


def connect(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    _bridge["file"] = sock.makefile("rwb")


def call(tool: str, arguments: dict[str, Any] | None = None) -> str:
    """Run one of Palui's built-in read tools (e.g. "palui__list_jobs"); its text result."""
    if not isinstance(tool, str):
        raise TypeError("tool must be a name such as 'palui__list_jobs'")
    request = json.dumps({"tool": tool, "arguments": arguments or {}}) + "\n"
    with _lock:
        file = _bridge.get("file")
        if file is None:
            raise ToolError("the bridge to Palui is not open in this run")
        file.write(request.encode())
        file.flush()
        line = file.readline()
    if not line:
        raise ToolError("the bridge to Palui closed")
    reply = json.loads(line)
    if reply.get("error"):
        raise ToolError(reply["error"])
    return str(reply["text"])
