"""How inference classes real third-party tools: unsafe reads and reads kept.

    python bench/real_kinds.py [--marks] [--list]

The tools are the published definitions of real MCP servers (tests/data/real_tools.jsonl: the
GitHub MCP server's tool snapshots, the reference servers' filesystem, git, fetch, time, memory,
sqlite, slack, brave-search, google-maps, puppeteer, redis, gitlab, ...), each with whether it
only reads (its own readOnlyHint where it has one, else judged by hand). Without `--marks` the
tools are classified with their annotations removed, so inference alone decides; with it, as
Palui classifies them at run time. "unsafe" counts tools that change something but came out
`read` (they would run with no card in a tainted turn): it must be 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palui.domain import RemoteTool
from palui.policy import ToolClass, classify

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "real_tools.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--marks", action="store_true", help="keep the servers' annotations")
    parser.add_argument("--list", action="store_true", help="print every tool's class")
    options = parser.parse_args()
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    unsafe, kept, lost = [], [], []
    for row in rows:
        annotations = row.get("annotations") if options.marks else None
        remote = RemoteTool(row["name"], row["description"], row["input_schema"], annotations)
        found = classify(f"mcp-{row['server']}__{row['name']}", remote, None)
        is_read = found.tool_class is ToolClass.READ
        if options.list:
            truth = "read" if row["read_only"] else "changes"
            print(f"{row['server']:>14} {row['name']:<40} {truth:<8} {found.explain()}")
        if is_read and not row["read_only"]:
            unsafe.append(row["name"])
        elif row["read_only"]:
            (kept if is_read else lost).append(row["name"])
    reads = len(kept) + len(lost)
    print(f"{len(rows)} real tools, {reads} of them only read")
    print(f"unsafe (changes something, classed read): {len(unsafe)} {unsafe}")
    print(f"reads classed read: {len(kept)} of {reads}; not read (a card or off): {len(lost)}")
    return 1 if unsafe else 0


if __name__ == "__main__":
    sys.exit(main())
