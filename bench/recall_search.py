"""How fast is the bundled recall server at size? Search, ask and profile over N memories.

    python bench/recall_search.py [--memories N] [--queries Q] [--mcp-queries M] [--seed S]

One run, one temporary database:

1. **build** - N synthetic memories (default 100,000) saved with `MemoryStore.add_many` in one
   transaction. The text is word soup with a natural shape: a Zipf-distributed vocabulary of
   ~20,000 made-up words plus English glue words ("the", "and", "my", ...) at the frequencies
   real text has them, 8-30 words a memory; 1 in 20 is tagged `profile`, 1 in 3 `work`.
2. **storage** - `search_memories`, `ask_memory` and `get_profile` as `MemoryStore` calls, Q
   times each. Half the queries use common words (which match thousands of memories), half rare
   ones. Profile queries are whole chat messages, as auto-recall sends them.
3. **baseline** - for the same search queries (and 20 times for the commonest word alone), the
   plain FTS5 query a first version would run:
   `SELECT rowid FROM memories_fts WHERE memories_fts MATCH '"w1" "w2"' ORDER BY rank LIMIT 10`.
   Its ratio shows what the store's extra work (AND-then-OR, capped ranking, loading the rows)
   costs, or saves: bm25 over every match of a common word is what the store avoids.
4. **mcp** - the same tools through the recall server over stdio (`python -m
   palui.recall_server --db ...`, SDK client), M calls each, sequential; `list_memories(limit=1)`
   is the round-trip floor of the transport.

Prints p50/p99/max in ms per phase and the ratios. Exit status 0 unless something failed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from palui.recall_server import MemoryStore, NewMemory

GLUE = ("the", "a", "and", "my", "to", "of", "is", "in", "for", "on", "at", "with", "was", "it")
SYLLABLES = tuple(
    "ka lo mi ra ten su po vi dan el or us ba ne ti go ham per zu qi".split(" ")  # noqa: SIM905
)
ROUND_LIMIT_S = 90  # the whole run stays under two minutes on a slow machine


class Words:
    """A vocabulary with Zipf weights; glue words take the top ranks, as in real text."""

    def __init__(self, rng: random.Random) -> None:
        made_up = {
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(40_000)
        }
        content = sorted(made_up - set(GLUE))
        rng.shuffle(content)
        self.rng = rng
        self.all = [*GLUE, *content]
        self.content = content
        self._cumulative = list(itertools.accumulate(1 / (r + 1) for r in range(len(self.all))))

    def text(self, count: int) -> str:
        return " ".join(self.rng.choices(self.all, cum_weights=self._cumulative, k=count))

    def common(self, count: int) -> list[str]:
        return self.rng.choices(self.content[:300], k=count)

    def rare(self, count: int) -> list[str]:
        return self.rng.choices(self.content[300:], k=count)


def memories(words: Words, count: int) -> Iterator[NewMemory]:
    for n in range(count):
        tags = ("profile",) if n % 20 == 0 else ("work",) if n % 3 == 0 else ()
        yield NewMemory(words.text(words.rng.randint(8, 30)), source_id=f"bench:{n}", tags=tags)


def queries(words: Words, count: int) -> dict[str, list[str]]:
    """Search words, questions and chat messages: half with common words, half with rare."""
    picks = [words.common if n % 2 else words.rare for n in range(count)]
    return {
        "search": [" ".join(pick(words.rng.randint(1, 3))) for pick in picks],
        "ask": [f"what do I know about {' and '.join(pick(2))}?" for pick in picks],
        "profile": [f"can you help me with {' '.join(pick(3))} for the weekend" for pick in picks],
    }


class Timings:
    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}

    def time(self, name: str, call: Callable[[], Any], count: int) -> None:
        samples = self.rows.setdefault(name, [])
        for _ in range(count):
            started = time.perf_counter()
            call()
            samples.append((time.perf_counter() - started) * 1000)

    async def time_async(self, name: str, call: Callable[[], Awaitable[Any]]) -> None:
        started = time.perf_counter()
        await call()
        self.rows.setdefault(name, []).append((time.perf_counter() - started) * 1000)

    def p(self, name: str, q: float) -> float:
        samples = sorted(self.rows[name])
        return samples[min(len(samples) - 1, int(q * len(samples)))]

    def print(self) -> None:
        print(f"{'':34} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'mean ms':>8}")
        for name, samples in self.rows.items():
            print(
                f"{name:34} {len(samples):5d} {self.p(name, 0.5):8.2f} {self.p(name, 0.99):8.2f}"
                f" {max(samples):8.2f} {statistics.fmean(samples):8.2f}"
            )


def storage_phase(store: MemoryStore, asked: dict[str, list[str]], timings: Timings) -> None:
    cycle = {kind: itertools.cycle(texts) for kind, texts in asked.items()}
    count = len(asked["search"])
    timings.time("storage search_memories", lambda: store.search(next(cycle["search"])), count)
    timings.time("storage ask_memory", lambda: store.ask(next(cycle["ask"])), count)
    timings.time("storage get_profile", lambda: store.profile(next(cycle["profile"])), count)
    timings.time("storage search, commonest word only", lambda: store.search(GLUE[0]), 20)


def baseline_phase(db: Path, asked: dict[str, list[str]], timings: Timings) -> None:
    conn = sqlite3.connect(db)
    plain = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 10"
    texts = itertools.cycle(asked["search"])

    def run() -> None:
        expression = " ".join(f'"{word}"' for word in next(texts).split())
        conn.execute(plain, (expression,)).fetchall()

    timings.time("baseline plain FTS5 MATCH top 10", run, len(asked["search"]))
    commonest = (f'"{GLUE[0]}"',)
    timings.time(
        "baseline, commonest word only", lambda: conn.execute(plain, commonest).fetchall(), 20
    )
    conn.close()


async def mcp_phase(db: Path, asked: dict[str, list[str]], count: int, timings: Timings) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "palui.recall_server", "--db", str(db)]
    )
    calls = {
        "search_memories": ("query", asked["search"]),
        "ask_memory": ("question", asked["ask"]),
        "get_profile": ("query", asked["profile"]),
    }
    async with Client(server) as client:
        for _ in range(20):  # warm up: imports, page cache, the server's first calls
            await client.call_tool("list_memories", {"limit": 1})
        for _ in range(count):
            await timings.time_async(
                "mcp list_memories(limit=1) floor",
                lambda: client.call_tool("list_memories", {"limit": 1}),
            )
        for tool, (argument, texts) in calls.items():
            for text in texts[:count]:
                result = await _timed_call(timings, client, tool, {argument: text})
                if result.is_error:
                    raise RuntimeError(f"{tool} failed: {result.content}")


async def _timed_call(
    timings: Timings, client: Client, tool: str, arguments: dict[str, Any]
) -> Any:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    timings.rows.setdefault(f"mcp {tool}", []).append((time.perf_counter() - started) * 1000)
    return result


def ratio(timings: Timings, name: str, base: str) -> str:
    return " ".join(
        f"{label} {timings.p(name, q) / timings.p(base, q):.2f}x"
        for label, q in (("p50", 0.5), ("p99", 0.99))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300, help="per tool, storage level")
    parser.add_argument("--mcp-queries", type=int, default=150, help="per tool, over stdio")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    load = ", ".join(f"{n:.1f}" for n in os.getloadavg())
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version},"
        f" {platform.machine()}, {os.cpu_count()} CPUs, load average {load}"
    )

    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "recall.db"
        words = Words(random.Random(args.seed))
        rows = list(memories(words, args.memories))
        asked = queries(words, args.queries)
        timings = Timings()
        with MemoryStore(db) as store:
            build = time.perf_counter()
            added = store.add_many(rows)
            build_s = time.perf_counter() - build
            size_mb = db.stat().st_size / 1e6
            rate = added / build_s
            print(f"vocabulary {len(words.all):,} words")
            print(f"built {added:,} memories in {build_s:.1f} s ({rate:,.0f}/s), {size_mb:.0f} MB")
            storage_phase(store, asked, timings)
        baseline_phase(db, asked, timings)
        asyncio.run(
            asyncio.wait_for(mcp_phase(db, asked, args.mcp_queries, timings), ROUND_LIMIT_S)
        )

    print()
    timings.print()
    print()
    base = "baseline plain FTS5 MATCH top 10"
    print(f"storage search vs baseline: {ratio(timings, 'storage search_memories', base)}")
    common = ratio(timings, "storage search, commonest word only", "baseline, commonest word only")
    print(f"storage search vs baseline, commonest word only: {common}")
    for tool in ("search_memories", "ask_memory", "get_profile"):
        print(f"mcp {tool} vs storage: {ratio(timings, f'mcp {tool}', f'storage {tool}')}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
