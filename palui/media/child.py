"""Running the PDF reader (`palui.media.pdf`) in a child process, under a wall-time limit and a
memory limit: the daemon's own memory and time never pay for a hostile file, and a file that
costs too much gets a clear reason (`Unreadable`) instead of a hung or dead daemon."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
from dataclasses import dataclass

from palui.logs import get_logger
from palui.media import pdf

log = get_logger("palui.media")

STDERR_CHARS = 2_000  # what a failed child's log line keeps of its stderr


class Unreadable(Exception):
    """The file can't be read; the message is the reason, in words for the person."""


@dataclass(frozen=True, slots=True)
class ChildLimits:
    max_chars: int
    max_pages: int
    timeout_s: float
    memory_mb: int


@dataclass(frozen=True, slots=True)
class PdfText:
    text: str
    pages: int  # in the file
    read: int  # pages read (at most `max_pages`)
    more: bool  # the pages read held more than `max_chars`


async def read_pdf(data: bytes, limits: ChildLimits) -> PdfText:
    """The PDF's text as the child read it; raises `Unreadable`."""
    memory = limits.memory_mb * 1024 * 1024
    # CPU time a little past the wall time: the daemon kills it first, unless it died itself.
    cpu_s = math.ceil(limits.timeout_s) + 1
    args = (str(limits.max_chars), str(limits.max_pages), str(memory), str(cpu_s))
    # By path, isolated (-I) and with an empty environment: the child imports pypdf and the
    # standard library only, and a file that subverts the parser finds no token or key in reach.
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        pdf.__file__,
        *args,
        env={},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(limits.timeout_s):
            out, err = await proc.communicate(data)
    except TimeoutError:
        log.warning("document_timed_out", pid=proc.pid, timeout_s=limits.timeout_s)
        raise Unreadable(f"it took too long to read (more than {limits.timeout_s:g} s)") from None
    finally:
        if proc.returncode is None:  # timed out, or the turn was cancelled: never left running
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
    try:
        answer = json.loads(out) if proc.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        stderr = err.decode(errors="replace")[-STDERR_CHARS:]
        log.warning("document_reader_failed", returncode=proc.returncode, stderr=stderr)
        raise Unreadable("reading it failed (the file may be damaged)")
    if (error := answer.get("error")) is not None:
        if error == pdf.MEMORY:
            raise Unreadable(f"it is too large to read (it needs more than {limits.memory_mb} MB)")
        raise Unreadable(str(error))
    text, pages, read = str(answer["text"]), int(answer["pages"]), int(answer["read"])
    return PdfText(text, pages, read, bool(answer["more"]))
