"""A stdio server's stderr pipe held open past the connector's end (a grandchild kept it, or
the server outlived its stop) is no longer logged: those lines would reach a log that its owner
(a test's captured stream) has closed, as "--- Logging error ---" tracebacks after the test."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from palui.connectors import transport


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.logged = threading.Event()

    def info(self, _event: str, **fields: Any) -> None:
        self.lines.append(fields["line"])
        self.logged.set()


async def test_lines_written_after_finish_are_not_logged_and_the_pump_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = Lines()
    monkeypatch.setattr(transport, "log", lines)
    monkeypatch.setattr(transport, "STDERR_DRAIN_S", 0.05)
    stderr = transport.ServerStderr()
    grandchild = os.dup(stderr.file.fileno())  # a process that inherited the server's stderr
    try:
        os.write(grandchild, b"early line\n")
        assert lines.logged.wait(10)
        await stderr.finish()  # the server is gone; the pipe is still open
        os.write(grandchild, b"late line\n")
        stderr._thread.join(10)
        assert not stderr._thread.is_alive()
    finally:
        os.close(grandchild)
    assert lines.lines == ["early line"]
