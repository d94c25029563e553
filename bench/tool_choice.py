"""Are the right tools offered out of hundreds? Tool-level choosing against main's connector-level.

    python bench/tool_choice.py [--max-tools 30] [--repeat 200]

The catalog is `tests/catalog` (12 fake servers modelled on public MCP servers, ~300 tools,
several over 30) plus Palui's four built-ins, every tool enabled; the tasks are its ~75 requests
written as a person would ask, each naming the tool it needs. For each task, as the turn's first
message:

1. **first step** - is the needed tool offered? Palui's `ToolRegistry.offer` (tools ranked one by
   one) and, in the same run, main's choice before it (whole connectors ranked by BM25 over all
   their tools' names and descriptions, kept in rank order while they fit: `main_offer` below is
   a faithful copy of that code).
2. **within two steps** - if it was not offered, the model searches with `palui__find_tools`
   (simulated deterministically: the query is the task's plain-English gist, what a model would
   ask for); is the tool callable at the next step? Main had no search: its second step offers
   what its first did.
3. **timing** - choosing for one message over catalogs of ~100 and ~1,000 tools (the catalog's
   servers copied under other ids), the index warm as in a running daemon (it is rebuilt only
   when a listing changes), p50 and p99 of `--repeat` runs; and the index build once.

Prints the rates, the misses and the times. Exit status 0.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from palui.tools.builtins import TOOLS as BUILTIN_TOOLS
from palui.tools.registry import ToolRegistry
from tests.catalog import TASKS, CatalogToolset, catalog_toolsets

# main's palui/tools/ranking.py and ToolRegistry.offer, as they were (connectors ranked whole).
_MAIN_TOKEN_RE = re.compile(r"[a-z0-9]+")


def _main_tokens(text: str) -> list[str]:
    words = _MAIN_TOKEN_RE.findall(text.lower().replace("_", " ").replace("-", " "))
    return [_main_stem(w) for w in words if len(w) > 1]


def _main_stem(word: str) -> str:
    for suffix in ("ing", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _main_rank(query: str, documents: Mapping[str, str]) -> list[str]:
    keys = list(documents)
    if not keys:
        return []
    bags = {key: Counter(_main_tokens(text)) for key, text in documents.items()}
    lengths = {key: sum(bag.values()) for key, bag in bags.items()}
    average = (sum(lengths.values()) / len(keys)) or 1.0
    query_terms = set(_main_tokens(query))
    frequency = Counter(term for bag in bags.values() for term in bag if term in query_terms)

    def score(key: str) -> float:
        bag, total = bags[key], 0.0
        for term in query_terms:
            tf = bag.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (len(keys) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            total += idf * tf * (1.2 + 1) / (tf + 1.2 * (1 - 0.75 + 0.75 * lengths[key] / average))
        return total

    order = {key: index for index, key in enumerate(keys)}
    return sorted(keys, key=lambda key: (-score(key), order[key]))


def _main_pick_within(ranked: Sequence[str], sizes: Mapping[str, int], room: int) -> list[str]:
    chosen = []
    for key in ranked:
        if sizes[key] <= room:
            chosen.append(key)
            room -= sizes[key]
    return chosen


def main_offer(toolsets: Sequence[CatalogToolset], query: str, max_tools: int) -> set[str]:
    groups = {t.id: [f"{t.id}__{r.name}" for r in t.tools()] for t in toolsets}
    remotes = {t.id: t.tools() for t in toolsets}
    builtin = groups.get("palui", [])
    others = {key: tools for key, tools in groups.items() if key != "palui"}
    room = max(max_tools - len(builtin), 0)
    if sum(len(tools) for tools in others.values()) > room:
        documents = {
            key: " ".join(f"{r.name} {r.description}" for r in remotes[key]) for key in others
        }
        sizes = {key: len(tools) for key, tools in others.items()}
        keep = _main_pick_within(_main_rank(query, documents), sizes, room)
        others = {key: others[key] for key in keep}
    return set(builtin) | {name for tools in others.values() for name in tools}


def _catalog(copies: int = 1, only: int | None = None) -> list[CatalogToolset]:
    toolsets = [CatalogToolset("palui", list(BUILTIN_TOOLS))]
    for copy in range(copies):
        for toolset in catalog_toolsets():
            cid = toolset.id if copy == 0 else f"{toolset.id}{copy}"
            toolsets.append(CatalogToolset(cid, toolset.listed))
    if only is not None:  # the first `only` tools, whole connectors and a cut last one
        cut, left = [], only
        for toolset in toolsets:
            if left <= 0:
                break
            cut.append(CatalogToolset(toolset.id, toolset.listed[:left]))
            left -= len(cut[-1].listed)
        toolsets = cut
    return toolsets


def _rates(max_tools: int) -> None:
    toolsets = _catalog()
    registry = ToolRegistry(toolsets)
    total = sum(len(t.tools()) for t in toolsets)
    first = second = main_first = 0
    misses: list[str] = []
    for task in TASKS:
        offer = registry.offer(task.text, max_tools)
        assert len(offer.tools) <= max_tools
        offered = task.tool in offer.tools
        found = offered
        if not offered and offer.searchable:
            offer.find(task.search)
            found = task.tool in offer.tools
        first += offered
        second += found
        main_first += task.tool in main_offer(toolsets, task.text, max_tools)
        if not offered:
            misses.append(f"  {'found' if found else 'MISSED'}: {task.tool} <- {task.text!r}")
    n = len(TASKS)
    print(f"catalog: {total} tools in {len(toolsets)} connectors, max_tools {max_tools}")
    print(f"tasks: {n}")
    print(f"{'':24}{'first step':>12}{'within two':>12}")
    print(f"{'tool-level (this)':24}{first / n:>12.1%}{second / n:>12.1%}")
    print(f"{'connector-level (main)':24}{main_first / n:>12.1%}{main_first / n:>12.1%}")
    if misses:
        print("not offered at the first step:")
        print("\n".join(misses))


def _timing(size: int, repeat: int, max_tools: int) -> None:
    toolsets = _catalog(copies=math.ceil(size / 300) + 1, only=size)
    registry = ToolRegistry(toolsets)
    started = time.perf_counter()
    registry.index()
    built_ms = (time.perf_counter() - started) * 1000
    times = []
    for run in range(repeat):
        task = TASKS[run % len(TASKS)]
        started = time.perf_counter()
        registry.offer(task.text, max_tools)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(
        f"choosing over {size:>5} tools: p50 {statistics.median(times):.3f} ms, "
        f"p99 {p99:.3f} ms (index built once: {built_ms:.2f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-tools", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    _rates(args.max_tools)
    for size in (100, 1000):
        _timing(size, args.repeat, args.max_tools)


if __name__ == "__main__":
    main()
