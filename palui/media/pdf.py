"""A PDF's text, read in a child process: `python -I .../palui/media/pdf.py <max chars>
<max pages> <memory bytes> <cpu seconds>`, the PDF on stdin, one JSON line on stdout. It
imports nothing of Palui: the standard library and pypdf only.

A small PDF can cost minutes and gigabytes to read (pages sharing one huge compressed content
stream, each page decoding it again), and pypdf can't be stopped from outside its loop; so it
runs here, in a process of its own the daemon kills at its wall-time limit
(`palui.media.child`), under an address-space limit set before pypdf is imported (a
MemoryError, not the host's OOM killer) and a CPU-time limit (a child whose daemon was killed
before it could kill it dies on its own). It reads no more pages than `max pages` and stops
once it has `max chars` characters: only what the turn would show is ever extracted.

The answer: {"text", "pages", "read", "more"} (pages in the file, pages read, whether text was
left unread), or {"error": reason} for a file it can't open, {"error": "memory"} past the limit.
"""

from __future__ import annotations

import io
import json
import resource
import sys
from typing import Any

MEMORY = "memory"  # the error a child past its address-space limit answers with


def limit(memory: int, cpu_s: int) -> None:
    """The hard limits too, so nothing in the child can raise them; no core file either."""
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def extract(data: bytes, max_chars: int, max_pages: int) -> dict[str, Any]:
    from pypdf import PdfReader  # after the limit: its import counts against it too
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return {"error": "the PDF is password-protected"}
        total = len(reader.pages)
        parts: list[str] = []
        size = read = 0
        for number, page in enumerate(reader.pages, 1):
            if number > max_pages or size > max_chars:
                break
            read = number
            text = (page.extract_text() or "").strip()
            if text:
                part = f"[page {number}]\n{text}"
                parts.append(part)
                size += len(part) + 2
    except PdfReadError as exc:
        return {"error": f"it is not a PDF I can open ({exc})"}
    except (KeyError, IndexError, TypeError, AttributeError, ValueError, RecursionError) as exc:
        # pypdf meets a malformed file with whatever its parser tripped on.
        return {"error": f"the PDF is damaged ({type(exc).__name__})"}
    # A lone surrogate (a broken font map) would travel in the JSON and fail the database's
    # UTF-8 later: replaced here.
    text = "\n\n".join(parts)[:max_chars].encode("utf-8", "replace").decode("utf-8")
    return {"text": text, "pages": total, "read": read, "more": size > max_chars}


def main() -> int:
    max_chars, max_pages, memory, cpu_s = (int(arg) for arg in sys.argv[1:5])
    data = sys.stdin.buffer.read()
    limit(memory, cpu_s)
    try:
        answer = extract(data, max_chars, max_pages)
    except MemoryError:
        answer = {"error": MEMORY}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
