"""The bundled recall server with a slow `get_profile`, for auto-recall's time limit.

    python tests/servers/slow_recall.py DB_PATH      (stdio)

RECALL_PROFILE_DELAY_S (default 3) is how long get_profile waits before answering; the other
tools answer at once. Test-only: production code has no such knob.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio

from palui.recall_server import MemoryStore, build_server


def build_slow_server(db: str, delay: float) -> Any:
    """The bundled server over `db`, its get_profile answering `delay` seconds late (also
    served in the tests' process: tests/fakes/in_process_mcp.py)."""
    server = build_server(MemoryStore(db))
    tool = server._tool_manager.get_tool("get_profile")
    assert tool is not None
    answer = tool.fn

    async def slow(**arguments: Any) -> Any:
        await anyio.sleep(delay)
        return await answer(**arguments)

    tool.fn = slow
    return server


def main() -> None:
    delay = float(os.environ.get("RECALL_PROFILE_DELAY_S", "3"))
    anyio.run(build_slow_server(sys.argv[1], delay).run_stdio_async)


if __name__ == "__main__":
    main()
