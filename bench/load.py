"""Does anything get lost under load? N chats x M turns through the real `palui run` subprocess.

    python bench/load.py [--chats 50] [--turns 5] [--database-url URL | --db postgresql]
                         [--telegram-limits] [--stream]

`palui run` runs as its own process (not in this one) against fakes served from this process
on loopback: the fake Bot API (`tests/fakes/telegram_api.py`, reached through
PALUI_TELEGRAM_API_URL) and the fake OpenAI-compatible model (`tests/fakes/model_server.py`),
which answers at once. Palui starts the notes MCP server (`tests/servers/notes_server.py`) and
the bundled recall server (on, as by default) as its own children. Each turn: the model calls
the read tool `mcp-notes__list_notes`, then answers with the person's text and the result.
Each chat is its own allowed user and sends its next message when its reply arrives.

It prints failed turns (a reply that is a failure message instead of the answer), lost replies
(a message never answered within the timeout), duplicated replies (more replies than messages,
counted after a short settle), other wrong replies, p50/p95 latency, the "database is locked"
lines in Palui's log, and the floor: the same model + MCP + sendMessage calls made directly at
the same concurrency (bench/turn_overhead.py's `run_floor`), measured in the same run, right
after Palui's phase, with the ratio. The machine may be shared: compare ratios, not seconds.

Palui runs with its production send limits (~1 message/s per chat, 30/s overall), which the
floor does not have: at 200 chats the global limit bounds the throughput (see docs/PERFORMANCE.md).
PALUI_RUNS_PER_HOUR and PALUI_DAILY_TOKEN_CAP are 0 (off), else the caps would refuse turns.

`--telegram-limits` holds both sides to Telegram's limits: the fake Bot API refuses (429) any
message past ~1 per second per chat, 20 per minute per group, 30 per second overall
(tests/fakes/telegram_limits.py), and the floor paces its sendMessage with the same
`SendRateLimiter` Palui uses; the refusals each side got are printed. `--stream` runs Palui as
it is by default (PALUI_STREAM_REPLIES=true; the fake knows drafts) instead of with streaming off.

Exit status: 0 when no turn failed and no reply was lost, duplicated or wrong; 1 otherwise.
"""

from __future__ import annotations

import os
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["PTB_TIMEDELTA"] = "1"

import argparse
import asyncio
import contextlib
import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import turn_overhead as common  # the shared fakes' glue and the floor

FAILURE_MARKS = ("went wrong", "Nothing was run", "could not be reached", "model call failed")
SETTLE_S = 3.0  # after the last reply: time for a duplicate to show up
START_TIMEOUT_S = 120.0


def palui_env(
    workdir: Path,
    fake_tg: Any,
    fake_model: Any,
    users: list[int],
    db_url: str | None,
    args_repo: Path,
) -> dict[str, str]:
    config = workdir / "palui.toml"
    config.write_text(
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(common.NOTES_SERVER))}]\n"
        f"env = {{ NOTES_FILE = {json.dumps(str(common.notes_file(workdir, 'load')))} }}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALUI_")}
    env.update(
        {
            "PALUI_TELEGRAM_TOKEN": fake_tg.token,
            "PALUI_TELEGRAM_API_URL": fake_tg.url,
            "PALUI_ALLOWED_USERS": ",".join(str(u) for u in users),
            "PALUI_MODEL": "openai/fake-model",
            "PALUI_MODEL_API_BASE": fake_model.api_base,
            "PALUI_MODEL_API_KEY": common.MODEL_KEY,
            "PALUI_DATA_DIR": str(workdir / "data"),
            "PALUI_CONFIG": str(config),
            "PALUI_KINDS_FILE": str(workdir / "no-kinds-file.yaml"),
            "PALUI_RUNS_PER_HOUR": "0",
            "PALUI_DAILY_TOKEN_CAP": "0",
            "PALUI_STREAM_REPLIES": "false",
            # Any free port: other checkouts' daemons may be running on this machine.
            "PALUI_HTTP_PORT": "0",
            "PYTHONPATH": str(args_repo),
        }
    )
    if db_url:
        env["PALUI_DATABASE_URL"] = db_url
    return env


@contextlib.contextmanager
def telegram_limits_both_sides(fakes: list[Any]) -> Iterator[None]:
    """Every fake Bot API made meanwhile keeps Telegram's limits (collected in `fakes`), and the
    floor's sendMessage first waits its slot, as a well-behaved bot's does."""
    from telegram import Bot

    from palui.channels.ratelimit import SendRateLimiter
    from tests.fakes.telegram_api import FakeTelegram

    init, send = FakeTelegram.__init__, Bot.send_message
    limiter = SendRateLimiter()

    def keeping(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.keep_limits()
        fakes.append(self)

    async def paced(self: Any, chat_id: Any, *args: Any, **kwargs: Any) -> Any:
        await limiter.acquire(int(chat_id))
        sent = await send(self, chat_id, *args, **kwargs)
        limiter.answered(int(chat_id))  # as Palui's sender paces (palui.channels.telegram.pacing)
        return sent

    FakeTelegram.__init__ = keeping  # type: ignore[method-assign]
    Bot.send_message = paced  # type: ignore[method-assign]
    try:
        yield
    finally:
        FakeTelegram.__init__ = init  # type: ignore[method-assign]
        Bot.send_message = send  # type: ignore[method-assign]


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a live process has used, from /proc; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


class DaemonCpu:
    """The CPU `palui run` itself and the MCP servers it started used in the measured window."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.daemon_s = self.servers_s = self.peak_rss_mb = 0.0

    def _now(self) -> tuple[float, dict[int, float]]:
        return process_cpu_s(self.pid), {c: process_cpu_s(c) for c in child_pids(self.pid)}

    def open(self) -> None:
        self._start = self._now()

    def close(self) -> None:
        daemon, servers = self._now()
        self.daemon_s = daemon - self._start[0]
        self.servers_s = sum(v - self._start[1].get(c, 0.0) for c, v in servers.items())
        self.peak_rss_mb = peak_rss_mb(self.pid)


def peak_rss_mb(pid: int) -> float:
    """A live process's peak resident set (VmHWM) in MB, from /proc; 0 when it is gone."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def classify(phase: common.Phase, tap: common.ReplyTap, chat_ids: list[int]) -> int:
    """Lost, duplicated and wrong replies into `phase`; the failed turns' count."""
    common.check_replies(phase, tap, chat_ids)
    failed = 0
    for chat_id in chat_ids:
        for _at, text in tap.replies.get(chat_id, []):
            if any(mark in text for mark in FAILURE_MARKS):
                failed += 1
                if failed <= 3:
                    phase.notes.append(f"failed turn in chat {chat_id}: {text[:160]!r}")
    phase.wrong -= failed  # a failure message is counted once, as a failed turn
    return failed


async def run_palui_process(
    args: argparse.Namespace,
    workdir: Path,
    fake_model: Any,
    tools: list[dict[str, Any]],
    cpu: list[DaemonCpu],
    bot_calls: Counter[str],
) -> tuple[common.Phase, int, int]:
    """The load through `palui run`: (the phase, failed turns, "database is locked" lines);
    the daemon's CPU in the window goes into `cpu`, its Bot API requests by method into
    `bot_calls`."""
    from tests.fakes.telegram_api import FakeTelegram

    phase = common.Phase("palui run (subprocess)", args.chats, args.turns)
    chat_ids = [common.FIRST_USER + i for i in range(args.chats)]
    log_path = workdir / "palui.log"
    async with (
        FakeTelegram() as fake_tg,
        common.database(args.db, workdir, "load") as fresh_url,
    ):
        tap = common.ReplyTap(fake_tg)
        users = [common.WARMUP_USER, *chat_ids]
        url = args.database_url or fresh_url
        env = palui_env(workdir, fake_tg, fake_model, users, url, args.palui_repo)
        if args.stream:
            env["PALUI_STREAM_REPLIES"] = "true"
            fake_tg.drafts_supported = True
        if args.via_litellm:
            env["PALUI_MODEL_VIA_LITELLM"] = "true"
        with log_path.open("w", encoding="utf-8") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "palui.cli", "run", env=env, cwd=workdir,
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                await fake_tg.wait_for_request("getUpdates", timeout=START_TIMEOUT_S)
                before = len(fake_model.requests)
                # Warm-up (not measured): connections, first SQL, the first tool call.
                await common.chat_loop(fake_tg, tap, common.WARMUP_USER, 2, [], phase.problems)
                if not tools and len(fake_model.requests) > before:
                    tools.extend(fake_model.requests[before].tools)
                cpu.append(DaemonCpu(process.pid))
                cpu[0].open()
                phase.window.open()
                first_call = len(fake_tg.requests)
                await asyncio.gather(
                    *(
                        common.chat_loop(
                            fake_tg, tap, c, args.turns, phase.latencies, phase.problems
                        )
                        for c in chat_ids
                    )
                )
                phase.window.close()
                cpu[0].close()
                bot_calls.update(r.method for r in fake_tg.requests[first_call:])
                await asyncio.sleep(SETTLE_S)
            finally:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), 60)
                except TimeoutError:
                    process.kill()
                    await process.wait()
        failed = classify(phase, tap, chat_ids)
    text = log_path.read_text(encoding="utf-8", errors="replace")
    return phase, failed, text.count("database is locked")


def print_report(
    args: argparse.Namespace,
    palui: common.Phase,
    failed: int,
    locked: int,
    floor: common.Phase,
    cpu: DaemonCpu | None,
    bot_calls: Counter[str],
) -> None:
    db = "PostgreSQL" if (args.database_url or args.db == "postgresql") else "SQLite"
    print(f"\n{args.chats} chats x {args.turns} turns, {db}, real `palui run` subprocess")
    limits = "Telegram's limits on both sides" if args.telegram_limits else "no limits kept"
    print(f"{limits}; streaming {'on (drafts)' if args.stream else 'off'}")
    daemon_model = "litellm" if args.via_litellm else "direct for openai/ models"
    print(f"model calls: the daemon's {daemon_model}; the floor's {args.floor_model}")
    other = args.palui_repo.resolve() != common.REPO
    print(f"palui code: {args.palui_repo if other else common.code_version()}")
    print(f"failed turns: {failed}   lost replies: {palui.lost}   duplicated: {palui.duplicated}")
    print(f"other wrong replies: {palui.wrong}   'database is locked' in the log: {locked}")
    for note in [*palui.notes, *palui.problems][:6]:
        print(f"  {note}")
    for phase in (palui, floor):
        print(
            f"{phase.name:28s} p50 {common.ms(phase.pct(50))} ms"
            f"  p95 {common.ms(phase.pct(95))} ms"
            f"  {phase.turns_per_s:6.1f} turns/s  ({phase.done} turns)"
        )
    for p in (50, 95):
        ratio = palui.pct(p) / floor.pct(p) if floor.pct(p) > 0 else float("nan")
        print(f"ratio to the floor, p{p}: {ratio:.2f}x")
    if cpu is not None and palui.done and floor.done:
        # Palui's phase: the daemon + its MCP servers (recall, notes), the fakes in this process.
        # The floor's: its client and the fakes in this process + its notes server.
        per = 1000 / palui.done
        print(
            f"CPU per turn, palui run: daemon {cpu.daemon_s * per:.1f} ms"
            f" + its MCP servers {cpu.servers_s * per:.1f} ms"
            f" (+ the fakes {palui.cpu_ms_per_turn:.1f} ms)"
        )
        print(
            f"CPU per turn, floor: client and fakes {floor.cpu_ms_per_turn:.1f} ms"
            f" + notes server {floor.child_cpu_ms_per_turn:.1f} ms"
        )
        print(f"peak RSS, palui run: {cpu.peak_rss_mb:.0f} MB")
    if palui.done:
        # Counts, steadier than times on a shared machine: e.g. the "typing" actions a turn made.
        per_turn = ", ".join(f"{m} {n / palui.done:.2f}" for m, n in sorted(bot_calls.items()))
        print(f"Bot API requests per turn, palui run: {per_turn}")
    if floor.problems:
        print(f"floor problems: {floor.problems[:3]}")


async def main_async(args: argparse.Namespace, workdir: Path) -> int:
    fakes: list[Any] = []
    if not args.telegram_limits:
        return await measure(args, workdir, fakes)
    with telegram_limits_both_sides(fakes):
        return await measure(args, workdir, fakes)


async def measure(args: argparse.Namespace, workdir: Path, fakes: list[Any]) -> int:
    from tests.fakes.model_server import FakeModel

    async with FakeModel() as fake_model:
        fake_model.brain = common.brain
        await common.warm_up_litellm(fake_model)
        tools: list[dict[str, Any]] = []
        print(f"{args.chats} chats x {args.turns} turns: palui run ...", flush=True)
        cpu: list[DaemonCpu] = []
        bot_calls: Counter[str] = Counter()
        palui, failed, locked = await run_palui_process(
            args, workdir, fake_model, tools, cpu, bot_calls
        )
        fake_model.requests.clear()
        print("the floor (direct calls) ...", flush=True)
        floor = await common.run_floor(args, workdir, fake_model, tools, "floor (direct calls)")
    print_report(args, palui, failed, locked, floor, cpu[0] if cpu else None, bot_calls)
    for name, fake in zip(("palui", "floor"), fakes, strict=False):
        refused = Counter(r.method for r in fake.limit_rejections)
        print(f"429s from Telegram's limits, {name}: {sum(refused.values())} {dict(refused)}")
    return 0 if palui.ok and not failed else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--database-url", default=None, help="e.g. a PostgreSQL URL")
    parser.add_argument(
        "--db", choices=("sqlite", "postgresql"), default="sqlite",
        help="postgresql: a fresh database on PALUI_TEST_POSTGRES, dropped afterwards",
    )  # fmt: skip
    parser.add_argument(
        "--palui-repo", type=Path, default=common.REPO,
        help="run the palui package of another checkout (e.g. `git archive main`) for a before",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, data)")
    parser.add_argument(
        "--telegram-limits", action="store_true",
        help="the fake Bot API refuses sends past Telegram's limits; the floor keeps them too",
    )  # fmt: skip
    parser.add_argument("--stream", action="store_true", help="PALUI_STREAM_REPLIES=true")
    parser.add_argument(
        "--floor-model",
        choices=("litellm", "direct"),
        default="litellm",
        help="the floor's model calls: through litellm (default), or over Palui's direct route",
    )
    parser.add_argument(
        "--via-litellm", action="store_true", help="PALUI_MODEL_VIA_LITELLM=true for the daemon"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    common.guard_network()
    workdir = Path(tempfile.mkdtemp(prefix="palui-load-"))
    try:
        return asyncio.run(main_async(args, workdir))
    finally:
        if args.keep:
            print(f"work dir kept: {workdir}")
        else:
            with contextlib.suppress(OSError):
                shutil.rmtree(workdir)


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
