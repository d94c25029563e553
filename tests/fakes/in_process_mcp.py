"""The test MCP servers in this process: the notes server and the bundled recall server served
to Palui's connectors through their transport seam (`Palui(settings, mcp_transport=...)`)
instead of as stdio subprocesses.

Each server start over stdio costs a process and the MCP SDK's import (about a second of CPU);
a test about Palui's handling of a connector's tools (cards, edits, the connector sheet, memory)
needs the same server and the same MCP session, not the process. A connector whose settings
are those of `with_notes` (tests/conftest.py) or of the bundled recall server gets the very same
server built in this process (`build_server` of tests/servers/notes_server.py and of
palui.recall_server) over the same files; any other connector, or a notes server asked for one
of its environment switches (NOTES_LOG, NOTES_HANG_ON, ...), still starts over stdio.
Tests about stdio itself (a server's death, its stderr, the doctor) don't use this.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from palui.config import McpServerSettings
from palui.connectors.transport import ServerTarget, open_transport
from palui.recall_server.server import build_server as build_recall_server
from palui.recall_server.store import MemoryStore
from tests.servers import notes_server, slow_recall

NOTES_SERVER = Path(notes_server.__file__)
SLOW_RECALL = Path(slow_recall.__file__)


class InProcessServers:
    """The transport: in-process for the notes and recall servers, stdio for the rest."""

    def __init__(self) -> None:
        self._stores: list[MemoryStore] = []
        self.started: list[str] = []  # which servers were built here, in order

    def __call__(self, settings: McpServerSettings, on_closed: Callable[[], None]) -> Any:
        target = self._in_process(settings)
        return open_transport(settings, on_closed) if target is None else target

    def _in_process(self, settings: McpServerSettings) -> ServerTarget | None:
        if settings.command != sys.executable or settings.url:
            return None
        args = list(settings.args)
        if args == [str(NOTES_SERVER)] and set(settings.env) <= {"NOTES_FILE"}:
            path = settings.env.get("NOTES_FILE")
            self.started.append("notes")
            return notes_server.build_server(notes_server.NoteStore(Path(path) if path else None))
        if args[:3] == ["-m", "palui.recall_server", "--db"] and len(args) == 4:
            store = MemoryStore(Path(args[3]))
            self._stores.append(store)
            self.started.append("recall")
            return build_recall_server(store)
        if len(args) == 2 and args[0] == str(SLOW_RECALL):
            if not set(settings.env) <= {"RECALL_PROFILE_DELAY_S"}:
                return None
            delay = float(settings.env.get("RECALL_PROFILE_DELAY_S", "3"))
            self.started.append("slow recall")
            return slow_recall.build_slow_server(args[1], delay)
        return None

    def close(self) -> None:
        for store in self._stores:
            store.close()
