"""Does Palui's memory stay flat? 10,000 turns in-process, RSS after 500 and after the last.

    python bench/soak.py [--turns 10000] [--chats 200] [--concurrency 20] [--db sqlite|postgresql]

In-process, with no network at all: the real app (`Palui`, its chat workers, inbox, turns,
tools, outbox and database) serving the in-memory channel of the tests
(`tests.fakes.memory_channel`), answering with a model that calls a read tool and then answers
at once, and the in-memory notes toolset (`tests.fakes.notes_toolset`). The fakes here keep
nothing per message (unlike the tests' own, which record every reply), so what grows is
Palui's. `--chats` chats take turns, `--concurrency` at a time; each turn is one message in, one
read-tool call, one reply out.

Reports RSS (VmRSS) after the first 500 turns (the warm-up: caches, SQLAlchemy's statement
cache, the connection pool) and after the last, and the growth between them; exit status 1 if
it is over 10 % (issue 14) or a reply was lost.
"""

from __future__ import annotations

import os
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import argparse
import asyncio
import gc
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from palui.domain import Completion, Message, ToolCallRequest, Usage  # noqa: E402
from palui.logs import configure_logging  # noqa: E402
from tests.fakes.memory_channel import (  # noqa: E402
    MemoryChannel,
    in_memory_settings,
    running_palui,
)
from tests.fakes.notes_toolset import NotesToolset  # noqa: E402

WARM_UP = 500
LIMIT = 0.10


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class ReadThenAnswer:
    """Calls list_notes, then answers; remembers nothing."""

    name = "soak"

    async def complete(
        self, messages: list[Message], tools: Any = (), *, on_delta: Any = None
    ) -> Completion:
        if not tools:  # compaction's summary request offers no tools
            return Completion("soak", "The person asked about their notes.", usage=Usage(10, 5))
        if messages and messages[-1].role == "tool":
            return Completion("soak", "You have one note.", usage=Usage(10, 5))
        call = ToolCallRequest("c1", "mcp-notes__list_notes", "{}")
        return Completion("soak", "", (call,), Usage(10, 5))

    async def ping(self) -> str:
        return self.name


class CountingChannel(MemoryChannel):
    """The tests' channel, but it counts replies instead of keeping them."""

    replies = 0

    async def send_part(self, chat_id: int, part: Any, *, reply_to: int | None = None) -> None:
        self.replies += 1


async def soak(args: argparse.Namespace, workdir: Path) -> int:
    url = f"sqlite+aiosqlite:///{workdir / 'palui.db'}"
    if args.db == "postgresql":
        url = os.environ.get(
            "PALUI_SOAK_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
        )
    settings = in_memory_settings(
        url, str(workdir / "data"), allowed_users=frozenset(range(1, args.chats + 1)),
        daily_token_cap=0, runs_per_hour=0,
    )  # fmt: skip
    configure_logging("console", "warning", settings.secrets())  # the log's cost, not its noise
    chat = CountingChannel()
    done = 0
    marks: dict[str, float] = {}
    started = time.monotonic()
    async with running_palui(settings, ReadThenAnswer(), chat, toolsets=[NotesToolset()]) as (
        _app,
        _chat,
    ):
        queue: asyncio.Queue[int] = asyncio.Queue()
        for n in range(args.turns):
            queue.put_nowait(n)

        async def person() -> None:
            nonlocal done
            while not queue.empty():
                n = queue.get_nowait()
                user = n % args.chats + 1
                said = chat.inbound(text=f"what notes do I have, {n}?", user_id=user)
                await chat.push(_in_chat(said, user))
                done += 1
                if done == WARM_UP:
                    gc.collect()
                    marks["warm"] = rss_mb()
                    print(f"RSS after {WARM_UP} turns: {marks['warm']:.1f} MB", flush=True)
                elif done % 1000 == 0:
                    print(f"{done} turns, RSS {rss_mb():.1f} MB", flush=True)

        await asyncio.gather(*(person() for _ in range(args.concurrency)))
        gc.collect()
        marks["end"] = rss_mb()
    took = time.monotonic() - started
    growth = (marks["end"] - marks["warm"]) / marks["warm"]
    print(
        f"soak: {args.turns} turns over {args.chats} chats ({args.concurrency} at a time), "
        f"{args.db}, in-process, {took:.0f} s ({args.turns / took:.1f} turns/s)"
    )
    print(
        f"RSS after {WARM_UP} turns {marks['warm']:.1f} MB, after {args.turns} "
        f"{marks['end']:.1f} MB: growth {100 * growth:+.1f} % (limit +{100 * LIMIT:.0f} %)"
    )
    print(f"replies: {chat.replies} of {args.turns}")
    return 0 if growth <= LIMIT and chat.replies == args.turns else 1


def _in_chat(inbound: Any, chat_id: int) -> Any:
    import dataclasses

    return dataclasses.replace(inbound, chat_id=chat_id)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    if args.turns <= WARM_UP:
        parser.error(f"--turns must be more than the {WARM_UP} warm-up turns")
    workdir = Path(tempfile.mkdtemp(prefix="palui-soak-"))
    try:
        return asyncio.run(soak(args, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
