"""`palui <args>` in this process: the CLI's `main` with the test's environment, stdin and
captured output, for tests about what a command does rather than about the process (a `palui`
subprocess pays Python's start and litellm's import, seconds of CPU each).

    code, out, err = await palui_main("runs", "show", turn_id, "--json")

`main` runs in a thread of its own (it calls `asyncio.run`, as a process would), so the test's
event loop, and the fakes served on it, keep running meanwhile. The logging set-up a command
makes is undone afterwards, so it does not leak into later tests of the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sys

import structlog

from palui.cli.main import main


async def palui_main(*args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run `palui <args>` with `stdin`; its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    structlog_config = structlog.get_config()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = await asyncio.wait_for(asyncio.to_thread(main, list(args)), 120)
    finally:
        sys.stdin = saved_stdin
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**structlog_config)
    return code, out.getvalue(), err.getvalue()
