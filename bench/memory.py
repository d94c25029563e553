"""What `palui run` costs in memory, start-up and CPU, against another checkout in one run.

    python bench/memory.py [--chats 200] [--turns 5] [--before <another checkout>] [--rounds 1]

For each checkout (`--before` if given, then this one; `--rounds 2` alternates them twice) it starts
the real `palui run` as its own process, as `bench/load.py` does (SQLite, bundled recall on, the
notes MCP server: two MCP servers; production send limits; the fake Bot API and the fake model
served from this process), and measures:

- start to first poll: from the process's spawn to its first getUpdates, on a database already
  migrated (a restart's start; `--fresh` for a first start, which also loads Alembic);
- RSS at the first poll, and idle RSS: after a warm-up chat of 2 turns and a settle (the model
  layer loaded and warm, nothing in flight): what a deployment that serves nobody holds;
- peak RSS (VmHWM) after `--chats` chats x `--turns` turns, and the daemon's CPU-seconds per turn
  in that window (process CPU time / turns, less sensitive to a shared machine than latency);
- the RSS of its MCP servers (children) at idle, for the record.

Only the daemon's own RSS is compared (its children are other processes). Lost, duplicated or
wrong replies are counted as in `bench/load.py`; exit status 1 when any.
"""

from __future__ import annotations

import os
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["PTB_TIMEDELTA"] = "1"

import argparse
import asyncio
import contextlib
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load
import turn_overhead as common

IDLE_SETTLE_S = 3.0


@dataclass
class Figures:
    label: str
    first_poll_s: float = 0.0
    rss_first_poll_mb: float = 0.0
    idle_rss_mb: float = 0.0
    children_idle_rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    cpu_ms_per_turn: float = 0.0
    turns: int = 0
    problems: int = 0


def rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def measure(
    args: argparse.Namespace, workdir: Path, fake_model: Any, label: str, repo: Path
) -> Figures:
    from tests.fakes.telegram_api import FakeTelegram

    figures = Figures(label)
    phase = common.Phase(label, args.chats, args.turns)
    chat_ids = [common.FIRST_USER + i for i in range(args.chats)]
    run_dir = workdir / label.replace(" ", "-")
    run_dir.mkdir()
    async with FakeTelegram() as fake_tg:
        tap = common.ReplyTap(fake_tg)
        users = [common.WARMUP_USER, *chat_ids]
        env = load.palui_env(run_dir, fake_tg, fake_model, users, None, repo)
        with (run_dir / "palui.log").open("w", encoding="utf-8") as log:
            if not args.fresh:  # a restart's start: the database is already at head
                migrate = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "palui.cli", "migrate", env=env, cwd=run_dir,
                    stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
                await migrate.wait()
            spawned = time.monotonic()
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "palui.cli", "run", env=env, cwd=run_dir,
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                await fake_tg.wait_for_request("getUpdates", timeout=load.START_TIMEOUT_S)
                figures.first_poll_s = time.monotonic() - spawned
                figures.rss_first_poll_mb = rss_mb(process.pid)
                await common.chat_loop(fake_tg, tap, common.WARMUP_USER, 2, [], phase.problems)
                await asyncio.sleep(IDLE_SETTLE_S)
                figures.idle_rss_mb = rss_mb(process.pid)
                figures.children_idle_rss_mb = sum(map(rss_mb, load.child_pids(process.pid)))
                cpu_before = load.process_cpu_s(process.pid)
                await asyncio.gather(
                    *(
                        common.chat_loop(
                            fake_tg, tap, c, args.turns, phase.latencies, phase.problems
                        )
                        for c in chat_ids
                    )
                )
                cpu = load.process_cpu_s(process.pid) - cpu_before
                figures.peak_rss_mb = load.peak_rss_mb(process.pid)
                figures.turns = len(phase.latencies)
                figures.cpu_ms_per_turn = 1000 * cpu / max(1, figures.turns)
            finally:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), 60)
                except TimeoutError:
                    process.kill()
                    await process.wait()
        failed = load.classify(phase, tap, chat_ids)
    figures.problems = failed + phase.lost + phase.duplicated + phase.wrong
    for note in [*phase.notes, *phase.problems][:3]:
        print(f"  {label}: {note}")
    return figures


async def main_async(args: argparse.Namespace, workdir: Path) -> list[Figures]:
    from tests.fakes.model_server import FakeModel

    trees = [("this", common.REPO)]
    if args.before is not None:
        trees.insert(0, ("before", args.before.resolve()))
    results: list[Figures] = []
    async with FakeModel() as fake_model:
        fake_model.brain = common.brain
        for round_ in range(args.rounds):
            for name, repo in trees:
                label = f"{name} {round_ + 1}"
                print(f"{label}: palui run from {repo} ...", flush=True)
                results.append(await measure(args, workdir, fake_model, label, repo))
    return results


def print_report(args: argparse.Namespace, results: list[Figures]) -> None:
    print(
        f"\n`palui run`, SQLite, recall on + notes MCP server, production send limits;"
        f" load: {args.chats} chats x {args.turns} turns\n"
        f"{'run':10s} {'first poll':>10s} {'RSS then':>9s} {'idle RSS':>9s} {'peak RSS':>9s}"
        f" {'CPU/turn':>9s} {'MCP RSS':>8s} {'problems':>8s}"
    )
    for f in results:
        print(
            f"{f.label:10s} {f.first_poll_s:8.2f} s {f.rss_first_poll_mb:6.0f} MB"
            f" {f.idle_rss_mb:6.0f} MB {f.peak_rss_mb:6.0f} MB {f.cpu_ms_per_turn:6.1f} ms"
            f" {f.children_idle_rss_mb:5.0f} MB {f.problems:8d}"
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="alternate the two trees N times")
    parser.add_argument(
        "--before", type=Path, default=None, help="another checkout to compare with (e.g. main's)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, data)")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="a first start (the database made at start), not a restart's",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    common.guard_network()
    workdir = Path(tempfile.mkdtemp(prefix="palui-memory-"))
    try:
        results = asyncio.run(main_async(args, workdir))
    finally:
        if args.keep:
            print(f"work dir kept: {workdir}")
        else:
            with contextlib.suppress(OSError):
                shutil.rmtree(workdir)
    print_report(args, results)
    return 1 if any(f.problems for f in results) else 0


if __name__ == "__main__":
    sys.exit(main())
