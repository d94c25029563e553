"""What a page-bomb PDF costs the daemon: the wall time until the person's file is answered and
how much the daemon's own memory grows, reading it through `MediaIntake.read` (as a chat's
worker does, with a channel that hands over the bytes).

    python bench/page_bomb.py                                  # both bombs, the defaults
    python bench/page_bomb.py --pages 20 --ops 100 --width 20000
    python bench/page_bomb.py --palui-repo /path/to/other/checkout     # its code: a before/after

The bombs (`tests/fakes/pdf_bomb.py`): every page shares one compressed content stream, decoded
again for each page. "wide": 20 pages of 100 strings of 20,000 characters (5.5 KB; 40 M
characters of text); "empty": 200 pages of 20,000 empty strings (28 KB; no text, all parsing).
Growth is this process's peak RSS (ru_maxrss) after minus before (the bombs are built in a
process of their own, so the peak before is the daemon-like process's): a child's memory is
not counted, which is the point.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent

BOMBS = {"wide": (20, 100, 20_000), "empty": (200, 20_000, 0)}


class _Hands:
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def download(self, file_id: str, max_bytes: int) -> bytes:
        return self.data


async def _never() -> bool:
    return False


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def measure(name: str, data: bytes) -> None:
    from palui.config.sections import MediaSettings
    from palui.domain import Attachment, AttachmentKind, ChatUser, Foreign, ForeignKind, Inbound
    from palui.media import MediaIntake, MediaLimits
    from palui.ports import Files

    # `[media]`'s defaults, for the fields this checkout's MediaLimits has (main's: the first 2).
    media = MediaSettings()
    limits = MediaLimits(
        **{f.name: getattr(media, f.name) for f in dataclasses.fields(MediaLimits)}
    )
    intake = MediaIntake(cast(Files, _Hands(data)), limits, transcriber=None, sees_images=_never)
    pdf = Attachment(AttachmentKind.DOCUMENT, "f", len(data), "application/pdf", f"{name}.pdf")
    label = Foreign(ForeignKind.DOCUMENT, f"a document you sent: {name}.pdf")
    inbound = Inbound(1, 1, ChatUser(1), None, attachment=pdf, foreign=(label,))
    before = _peak_mb()
    started = time.perf_counter()
    read: Any = await intake.read(inbound)
    took = time.perf_counter() - started
    grew = _peak_mb() - before
    answer = getattr(read, "note", None) or f"read ({len(read.foreign[0].text or ''):,} chars)"
    print(f"{name:6} {len(data):>7,} B  {took:6.1f} s  peak RSS +{grew:6.1f} MB  -> {answer}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int)
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--width", type=int, default=20_000)
    parser.add_argument("--palui-repo", type=Path, default=ROOT, help="whose palui to measure")
    args = parser.parse_args()
    sys.path.insert(0, str(args.palui_repo.resolve()))
    bombs = BOMBS if args.pages is None else {"custom": (args.pages, args.ops, args.width)}
    for name, shape in bombs.items():
        await measure(name, _built(*shape))


def _built(pages: int, ops: int, width: int) -> bytes:
    """The bomb, built in a process of its own: building it must not raise this one's peak."""
    code = (
        "import sys; from tests.fakes.pdf_bomb import page_bomb; "
        f"sys.stdout.buffer.write(page_bomb({pages}, {ops}, {width}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=True, cwd=ROOT
    ).stdout


if __name__ == "__main__":
    asyncio.run(main())
