"""How much time does Palui add to a turn? N concurrent chats against the real app, in-process.

    python bench/turn_overhead.py [--chats N] [--turns T] [--db sqlite|postgresql]
                                  [--skip-limited] [--profile FILE] [--keep]

Everything runs on loopback: the fake Bot API and the fake OpenAI-compatible model from
`tests/fakes/`, and the real notes MCP server (`tests/servers/notes_server.py`) over stdio.
Every turn is the same: the person's message -> the model calls the READ tool
`mcp-notes__list_notes` -> the notes server answers -> the model answers (echoing the person's
text and the tool result) -> the answer is sent with sendMessage. Each chat is its own allowed
user and sends its next message only once its previous reply arrived (closed loop).

Four phases, one process, one run (see docs/PERFORMANCE.md):

1. **floor, before** - the same four calls made directly at the same concurrency, with nothing
   around them: `litellm.acompletion` (the tool call), `mcp.Client.call_tool` over stdio,
   `litellm.acompletion` (the answer), `telegram.Bot.send_message`. Same litellm arguments, tool
   list, system prompt and history as Palui's; nothing stored. It runs while the first Palui app
   is up but idle, once that app has shown which tools it offers.
2. **palui, send limits off** - the real `Palui` app (`async with app: serve_telegram(stop)`),
   but its `TelegramChannel` sends within limits that are off (`Palui(settings,
   send_limits=...)`, the composition root's seam). This is Palui's own per-turn cost: polling,
   inbox, database, context, policy, tools, outbox, logging.
3. **floor, after** - the floor again; other load on the machine shows up as a difference
   between the two floors, and the ratios use their mean.
4. **palui, production send limits** - the app exactly as `palui run` builds it: its sender
   keeps ~1 message/s per chat and 30 messages/s overall (palui/channels/ratelimit.py). The
   report says which bound held: the per-chat limit, the global one, or Palui's own CPU.

The fakes, the floor and Palui share one event loop and one process, so RSS and CPU include the
fakes (the notes servers are child processes: their CPU is reported apart).

Exit status: 0 when every chat got exactly T replies, in order, each answering its own message
(in every phase); 1 otherwise.
"""

from __future__ import annotations

import os
import sys

# Before anything can import litellm (it would fetch its price map) or python-telegram-bot.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["PTB_TIMEDELTA"] = "1"

import argparse
import asyncio
import contextlib
import cProfile
import html
import json
import platform
import pstats
import resource
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fakes.network import is_loopback  # noqa: E402 (after the path set-up above)

NOTES_SERVER = REPO / "tests" / "servers" / "notes_server.py"
TOOL = "mcp-notes__list_notes"
POSTGRES_ADMIN_DSN = os.environ.get(
    "PALUI_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
FLOOR_BEFORE = "floor (direct calls), before"
FLOOR_AFTER = "floor (direct calls), after"
PALUI_FREE = "palui, send limits off"
PALUI_LIMITED = "palui, production send limits"
FIRST_USER = 7_000_001
WARMUP_USER = 6_999_999
MODEL_KEY = "sk-bench-0123456789abcdef"
REPLY_TIMEOUT_S = 120.0  # one reply; a lost reply fails the run instead of hanging it
PALUI_TIMEOUT_S = 180.0  # start-up and shut-down steps (a loaded machine is slow to start)


# -- no network but loopback -------------------------------------------------------------------


def guard_network() -> None:
    """Any connection to a non-loopback address fails loudly (as tests/conftest.py does)."""
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> Any:
        if not is_loopback(address):
            raise OSError(f"bench: refusing to reach the network: {address!r}")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not is_loopback(address):
            raise OSError(f"bench: refusing to reach the network: {address!r}")
        return real_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


# -- measuring ---------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_children() -> dict[int, float]:
    """CPU seconds of each live child process (the notes servers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, float] = {}
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            try:
                pids = (task / "children").read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                found[int(pid)] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return found


def rss_now_mb() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def children_peak_rss_mb() -> float:
    """The largest peak RSS of the live child processes (VmHWM: since their exec, so not the
    copy of this process a fork briefly is, which RUSAGE_CHILDREN would report)."""
    peak = 0.0
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            try:
                pids = (task / "children").read_text().split()
            except OSError:
                continue
            for pid in pids:
                with contextlib.suppress(OSError):
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            peak = max(peak, int(line.split()[1]) / 1024)
    return peak


@dataclass
class Window:
    """Wall time and CPU of one measured stretch."""

    started: float = 0.0
    ended: float = 0.0
    cpu_start: float = 0.0
    cpu_end: float = 0.0
    children_start: dict[int, float] = field(default_factory=dict)
    children_end: dict[int, float] = field(default_factory=dict)

    def open(self) -> None:
        self.children_start = cpu_children()
        self.cpu_start = cpu_self()
        self.started = time.monotonic()

    def close(self) -> None:
        self.ended = time.monotonic()
        self.cpu_end = cpu_self()
        self.children_end = cpu_children()

    @property
    def wall_s(self) -> float:
        return self.ended - self.started

    @property
    def cpu_s(self) -> float:
        return self.cpu_end - self.cpu_start

    @property
    def child_cpu_s(self) -> float:
        return sum(v - self.children_start.get(pid, 0.0) for pid, v in self.children_end.items())


@dataclass
class Phase:
    name: str
    chats: int
    turns: int
    window: Window = field(default_factory=Window)
    latencies: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    wrong: int = 0
    counts: dict[str, float] = field(default_factory=dict)  # per-turn counts (requests, SQL)
    rss_end_mb: float = float("nan")
    child_rss_mb: float = float("nan")
    notes: list[str] = field(default_factory=list)

    @property
    def done(self) -> int:
        return len(self.latencies)

    @property
    def turns_per_s(self) -> float:
        return self.done / self.window.wall_s if self.window.wall_s > 0 else float("nan")

    @property
    def mean_s(self) -> float:
        return sum(self.latencies) / len(self.latencies) if self.latencies else float("nan")

    def pct(self, p: float) -> float:
        return percentile(self.latencies, p)

    @property
    def cpu_ms_per_turn(self) -> float:
        return 1000 * self.window.cpu_s / self.done if self.done else float("nan")

    @property
    def child_cpu_ms_per_turn(self) -> float:
        return 1000 * self.window.child_cpu_s / self.done if self.done else float("nan")

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.wrong or self.problems)


# -- the fakes ---------------------------------------------------------------------------------


def message_text(chat_id: int, k: int) -> str:
    return f"hello from chat {chat_id} message {k}"


def brain(request: Any) -> Any:
    """Every turn: call list_notes first; once its result is in, answer with the person's text
    and the result, so each reply can be checked against the message it answers."""
    from tests.fakes.model_server import Script

    messages = request.messages
    if messages and messages[-1].get("role") == "tool":
        result = str(messages[-1].get("content") or "").replace("\n", "; ")
        return Script(text=f"echo: {request.last_user_text} | notes: {result}")
    return Script(tool_calls=[(TOOL, "{}")])


class ReplyTap:
    """Sees each sendMessage as the fake Bot API answers it: who got what, when.

    The fake's own `wait_for_messages` re-reads (and deep-copies) every sent message on every
    change, which is quadratic in the number of chats and would make the fake, which shares the
    process and the event loop with Palui, the thing being measured. This wraps the fake's
    sendMessage handler instead and resolves one future per chat: event-driven, O(1).
    """

    def __init__(self, fake: Any) -> None:
        self.replies: dict[int, list[tuple[float, str]]] = defaultdict(list)
        self._waiters: dict[int, asyncio.Future[tuple[float, str]]] = {}
        handlers = fake._handlers  # the fake has no hook for this; wrap its handler
        original = handlers["sendmessage"]

        def send_message(params: dict[str, Any]) -> Any:
            result = original(params)
            now = time.monotonic()
            chat_id = int(result["chat"]["id"])
            text = str(result.get("text", ""))
            self.replies[chat_id].append((now, text))
            waiter = self._waiters.pop(chat_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result((now, text))
            return result

        handlers["sendmessage"] = send_message

    def expect(self, chat_id: int) -> asyncio.Future[tuple[float, str]]:
        """A future for the chat's next reply; create it before the message goes out."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[chat_id] = waiter
        return waiter


def check_replies(phase: Phase, tap: ReplyTap, chat_ids: list[int]) -> None:
    """Every chat got exactly T replies, in order, each answering its own message."""
    for chat_id in chat_ids:
        got = [text for _at, text in tap.replies.get(chat_id, [])]
        phase.lost += max(0, phase.turns - len(got))
        phase.duplicated += max(0, len(got) - phase.turns)
        for k, text in enumerate(got[: phase.turns]):
            wanted = f"echo: {message_text(chat_id, k)} | notes: 1: Groceries"
            if text != wanted:
                phase.wrong += 1
                if phase.wrong <= 3:
                    phase.problems.append(f"chat {chat_id} reply {k}: {text[:120]!r}")
    strangers = set(tap.replies) - set(chat_ids) - {WARMUP_USER}
    for chat_id in sorted(strangers)[:3]:
        phase.problems.append(f"replies to a chat nobody wrote from: {chat_id}")


async def chat_loop(
    fake: Any, tap: ReplyTap, chat_id: int, turns: int, latencies: list[float], problems: list[str]
) -> None:
    """One person: send, wait for the reply (an event, not a poll), send the next."""
    for k in range(turns):
        waiter = tap.expect(chat_id)
        pushed = time.monotonic()
        fake.push_text(chat_id, chat_id, message_text(chat_id, k))
        try:
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                arrived, _text = await waiter
        except TimeoutError:
            problems.append(f"chat {chat_id}: no reply to message {k} in {REPLY_TIMEOUT_S:g} s")
            return
        latencies.append(arrived - pushed)


# -- databases ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def database(kind: str, workdir: Path, label: str) -> AsyncIterator[str | None]:
    """None for SQLite (Palui's default file in its data dir), or a fresh PostgreSQL database
    dropped afterwards."""
    if kind == "sqlite":
        yield None
        return
    import asyncpg

    name = f"palui_bench_{label}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(POSTGRES_ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    try:
        yield f"{base}/{name}"
    finally:
        admin = await asyncpg.connect(POSTGRES_ADMIN_DSN)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def notes_file(workdir: Path, label: str) -> Path:
    path = workdir / f"notes-{label}.json"
    path.write_text(json.dumps({"1": {"title": "Groceries", "body": "milk"}}))
    return path


# -- phase: Palui ------------------------------------------------------------------------------


def limits_off() -> Any:
    """Send limits that never hold a send back (`Palui(settings, send_limits=...)`)."""
    from palui.channels.ratelimit import SendLimits

    return SendLimits(per_chat_interval=0.0, group_per_minute=10**9, global_per_second=10**9)


def palui_environment(
    workdir: Path, fake_tg: Any, fake_model: Any, users: list[int], db_url: str | None, label: str
) -> None:
    config = workdir / f"palui-{label}.toml"
    config.write_text(
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(NOTES_SERVER))}]\n"
        f"env = {{ NOTES_FILE = {json.dumps(str(notes_file(workdir, label)))} }}\n"
    )
    for name in [n for n in os.environ if n.startswith("PALUI_") and n != "PALUI_TEST_POSTGRES"]:
        del os.environ[name]
    os.environ.update(
        {
            "PALUI_TELEGRAM_TOKEN": fake_tg.token,
            "PALUI_TELEGRAM_API_URL": fake_tg.url,
            "PALUI_ALLOWED_USERS": ",".join(str(u) for u in users),
            "PALUI_MODEL": "openai/fake-model",
            "PALUI_MODEL_API_BASE": fake_model.api_base,
            "PALUI_MODEL_API_KEY": MODEL_KEY,
            "PALUI_DATA_DIR": str(workdir / f"data-{label}"),
            "PALUI_CONFIG": str(config),
            "PALUI_KINDS_FILE": str(workdir / "no-kinds-file.yaml"),
            "PALUI_RUNS_PER_HOUR": "0",
            "PALUI_DAILY_TOKEN_CAP": "0",
            "PALUI_STREAM_REPLIES": "false",
            # Any free port: with the default 8080, a second run beside this one could not
            # listen and its app stopped.
            "PALUI_HTTP_PORT": "0",
        }
    )
    if db_url:
        os.environ["PALUI_DATABASE_URL"] = db_url


class SqlCounter:
    """Counts SQL statements and commits on Palui's engine (to report them per turn)."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self.statements = 0
        self.transactions = 0
        self.commits = 0
        self.compiled = 0  # statements SQLAlchemy compiled anew (not from its compiled cache)
        self.connects = 0  # connections the pool opened (each: connect, PRAGMAs, cold caches)
        self.counting = False
        self.texts: Counter[str] = Counter()  # each statement's first line, to see what runs
        sync_engine = engine.sync_engine

        def on_execute(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            if not self.counting:
                return
            text = " ".join(statement.split())
            self.texts[text[:160]] += 1
            # BEGIN is transaction control (Palui emits it itself on SQLite, palui.db.writes):
            # counted as a transaction, not as a statement.
            if text.upper().startswith("BEGIN"):
                self.transactions += 1
            else:
                self.statements += 1

        def on_commit(*_args: Any) -> None:
            if self.counting:
                self.commits += 1
                self.texts["COMMIT"] += 1

        def after_execute(
            _c: Any, _cur: Any, statement: str, _p: Any, context: Any, _m: Any
        ) -> None:
            from sqlalchemy.engine.interfaces import CacheStats

            hit = getattr(context, "cache_hit", CacheStats.CACHE_HIT)
            # BEGIN is issued on the driver, below the cache: not a statement that could miss.
            begin = statement.lstrip().upper().startswith("BEGIN")
            if self.counting and hit is not CacheStats.CACHE_HIT and not begin:
                self.compiled += 1

        def on_connect(*_args: Any) -> None:
            self.connects += self.counting

        event.listen(sync_engine, "connect", on_connect)
        event.listen(sync_engine, "before_cursor_execute", on_execute)
        event.listen(sync_engine, "after_cursor_execute", after_execute)
        event.listen(sync_engine, "commit", on_commit)


async def palui_state(app: Any) -> tuple[int, int, int, int]:
    """(turns done, list_notes calls ok, inbox rows pending, outbox rows unsent)."""
    from sqlalchemy import func, select

    from palui.db.models import CallRecordRow, InboxUpdate, OutboxMessage, Turn

    async with app.db.session() as s:
        done = await s.scalar(select(func.count()).where(Turn.status == "done"))
        tools = await s.scalar(
            select(func.count()).where(CallRecordRow.tool == TOOL, CallRecordRow.status == "ok")
        )
        inbox = await s.scalar(select(func.count()).where(InboxUpdate.status == "pending"))
        outbox = await s.scalar(select(func.count()).where(OutboxMessage.sent_at.is_(None)))
    return int(done or 0), int(tools or 0), int(inbox or 0), int(outbox or 0)


async def run_palui(
    args: argparse.Namespace,
    workdir: Path,
    fake_model: Any,
    *,
    limited: bool,
    tools: list[dict[str, Any]],
    profile: cProfile.Profile | None = None,
    before: Callable[[], Awaitable[None]] | None = None,
) -> Phase:
    """One Palui phase. `tools` gets what Palui offered the model (if it is still empty);
    `before` runs once Palui is up and warm, before the measured window (Palui idles then)."""
    from palui.app.root import Palui
    from palui.config import load_settings
    from palui.logs import configure_logging
    from tests.fakes.telegram_api import FakeTelegram

    label = "limited" if limited else "unlimited"
    name = PALUI_LIMITED if limited else PALUI_FREE
    phase = Phase(name, args.chats, args.turns)
    chat_ids = [FIRST_USER + i for i in range(args.chats)]
    async with FakeTelegram() as fake_tg, database(args.db, workdir, label) as db_url:
        tap = ReplyTap(fake_tg)
        palui_environment(workdir, fake_tg, fake_model, [WARMUP_USER, *chat_ids], db_url, label)
        settings = load_settings()
        # As `palui run` does; to a file, so the log's cost counts but the console stays clean.
        log_path = workdir / f"palui-{label}.log"
        log_stream = log_path.open("a", encoding="utf-8")
        configure_logging(settings.log_format, settings.log_level, settings.secrets(), log_stream)
        model_requests_before = len(fake_model.requests)
        app = Palui(settings, send_limits=None if limited else limits_off())
        stop = asyncio.Event()
        serving: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(PALUI_TIMEOUT_S):
                await app.__aenter__()
                serving = asyncio.create_task(app.serve_telegram(stop))
                await app.serving.wait()  # started and warm (it polled before)
            # Warm-up (not measured): first SQL compilations, connection pool, first tool call.
            await chat_loop(fake_tg, tap, WARMUP_USER, 2, [], phase.problems)
            if not tools and len(fake_model.requests) > model_requests_before:
                tools.extend(fake_model.requests[model_requests_before].tools)
            if before is not None:
                await before()
            sql = SqlCounter(app.db.engine)
            requests_before = Counter(r.method for r in fake_tg.requests)
            model_before = len(fake_model.requests)
            sql.counting = True
            if profile is not None:
                profile.enable()
            phase.window.open()
            await asyncio.gather(
                *(
                    chat_loop(fake_tg, tap, c, args.turns, phase.latencies, phase.problems)
                    for c in chat_ids
                )
            )
            phase.window.close()
            if profile is not None:
                profile.disable()
            sql.counting = False
            turns = max(phase.done, 1)
            sent = Counter(r.method for r in fake_tg.requests) - requests_before
            for method in ("getUpdates", "sendChatAction", "sendMessage"):
                phase.counts[f"Bot API {method}"] = sent[method] / turns
            phase.counts["model requests"] = (len(fake_model.requests) - model_before) / turns
            phase.counts["SQL statements"] = sql.statements / turns
            phase.counts["DB transactions"] = sql.transactions / turns
            phase.counts["DB commits"] = sql.commits / turns
            phase.counts["SQL compiled anew"] = sql.compiled / turns  # cache misses, no key
            phase.counts["DB connections opened"] = sql.connects / turns
            if args.statements:
                phase.notes.append("SQL per turn, by statement:")
                for text, n in sql.texts.most_common():
                    phase.notes.append(f"  {n / turns:5.2f}  {text}")
            phase.rss_end_mb = rss_now_mb()
            phase.child_rss_mb = children_peak_rss_mb()
            # Verification only (outside the measured window): wait, bounded, until Palui has
            # recorded every reply as sent, so nothing is pending when it stops.
            expected_done = 2 + len(chat_ids) * args.turns
            state = await palui_state(app)
            for _ in range(250):
                if state[0] >= expected_done and state[2] == 0 and state[3] == 0:
                    break
                await asyncio.sleep(0.02)
                state = await palui_state(app)
            done, tool_calls, inbox_pending, outbox_pending = state
            if done != expected_done or tool_calls != expected_done:
                phase.problems.append(
                    f"database: {done} turns done and {tool_calls} {TOOL} calls ok, "
                    f"expected {expected_done} of each"
                )
            if inbox_pending or outbox_pending:
                phase.problems.append(
                    f"database: {inbox_pending} inbox rows pending, {outbox_pending} replies unsent"
                )
        finally:
            stop.set()
            if serving is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(serving, PALUI_TIMEOUT_S)
            await app.__aexit__(None, None, None)
            # Back to stderr (warnings only) before the file closes under the root handler.
            configure_logging(settings.log_format, "warning", settings.secrets())
            log_stream.close()
        check_replies(phase, tap, chat_ids)
        with contextlib.suppress(OSError):
            lines = sum(1 for _ in log_path.open(encoding="utf-8"))
            phase.counts["log lines"] = lines / max(phase.done + 2, 1)
    return phase


# -- phase: the floor --------------------------------------------------------------------------


async def run_floor(
    args: argparse.Namespace,
    workdir: Path,
    fake_model: Any,
    tools: list[dict[str, Any]],
    name: str,
) -> Phase:
    """The same four calls per turn, made directly, at the same concurrency; the model is
    offered `tools`, the tools Palui offered it (so both send the same requests)."""
    import litellm
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from telegram import Bot
    from telegram.constants import ParseMode
    from telegram.request import HTTPXRequest

    from palui.agent.context import SYSTEM_PROMPT
    from palui.llm.openai_http import OpenAIHttp
    from palui.llm.wire import Stream
    from tests.fakes.telegram_api import FakeTelegram

    phase = Phase(name, args.chats, args.turns)
    # The floor's model calls: through litellm (the floor), or over the direct HTTP
    # route Palui takes for OpenAI-style models (the same requests, the same client code).
    direct = None
    if getattr(args, "floor_model", "litellm") == "direct":
        direct = OpenAIHttp(fake_model.api_base, MODEL_KEY, 60)
    chat_ids = [FIRST_USER + i for i in range(args.chats)]
    system = SYSTEM_PROMPT.format(now=datetime.now(UTC).strftime("%Y-%m-%d %H:%M"))
    # The keyword arguments Palui's ModelClient passes (one request per call, no retries).
    completion_kwargs: dict[str, Any] = {
        "model": "openai/fake-model",
        "api_base": fake_model.api_base,
        "api_key": MODEL_KEY,
        "timeout": 60,
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
    }
    server = StdioServerParameters(
        command=sys.executable,
        args=[str(NOTES_SERVER)],
        env={"NOTES_FILE": str(notes_file(workdir, "floor"))},
    )
    async with FakeTelegram() as fake_tg:
        tap = ReplyTap(fake_tg)
        # The same HTTP set-up as Palui's sender (pool of 16 connections).
        request = HTTPXRequest(connection_pool_size=16, read_timeout=15, connect_timeout=10)
        bot = Bot(fake_tg.token, base_url=fake_tg.base_url, request=request)
        async with bot, Client(server, mode="auto", cache=None, read_timeout_seconds=15) as client:
            await client.list_tools()  # as Palui's connector does once connected

            async def complete(messages: list[dict[str, Any]]) -> tuple[str, Any]:
                """(the answer's text, its first tool call or None); streamed, as Palui's calls
                are, when Palui streams (`--stream`), so both sides make the same requests."""
                if direct is not None:  # --floor-model direct: Palui's own HTTP route
                    return await complete_direct(direct, messages)
                if not getattr(args, "stream", False):
                    response = await litellm.acompletion(
                        messages=messages, tools=tools, **completion_kwargs
                    )
                    message = response.choices[0].message
                    return message.content or "", (message.tool_calls or [None])[0]
                chunks = await litellm.acompletion(
                    messages=messages, tools=tools, stream=True,
                    stream_options={"include_usage": True}, **completion_kwargs,
                )  # fmt: skip
                text: list[str] = []
                call: Any = None
                async for chunk in chunks:
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    text.append(delta.content or "")
                    for part in delta.tool_calls or ():
                        if call is None:
                            call = SimpleNamespace(
                                id=part.id, function=SimpleNamespace(name="", arguments="")
                            )
                        call.function.name = call.function.name or part.function.name or ""
                        call.function.arguments += part.function.arguments or ""
                return "".join(text), call

            async def complete_direct(
                route: Any, messages: list[dict[str, Any]]
            ) -> tuple[str, Any]:
                async def on_delta(_text: str) -> None:
                    pass

                completion = await route.attempt(
                    "openai/fake-model",
                    {"messages": messages, "tools": tools},
                    on_delta if getattr(args, "stream", False) else None,
                    Stream("openai/fake-model"),
                )
                call = None
                if completion.tool_calls:
                    first = completion.tool_calls[0]
                    function = SimpleNamespace(name=first.name, arguments=first.arguments)
                    call = SimpleNamespace(id=first.id, function=function)
                return completion.content, call

            async def one_turn(chat_id: int, k: int, history: list[dict[str, Any]]) -> float:
                started = time.monotonic()
                user = {"role": "user", "content": message_text(chat_id, k)}
                messages = [{"role": "system", "content": system}, *history, user]
                _, call = await complete(messages)
                result = await client.call_tool(
                    call.function.name.removeprefix("mcp-notes__"),
                    json.loads(call.function.arguments or "{}"),
                    read_timeout_seconds=30,
                )
                text = "\n".join(b.text for b in result.content if getattr(b, "text", None))
                messages += [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call.id,
                                "type": "function",
                                "function": {
                                    "name": call.function.name,
                                    "arguments": call.function.arguments,
                                },
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": call.id, "content": text},
                ]
                answer, _ = await complete(messages)
                waiter = tap.expect(chat_id)
                await bot.send_message(chat_id, html.escape(answer), parse_mode=ParseMode.HTML)
                arrived, _ = await waiter
                history += [user, {"role": "assistant", "content": answer}]
                return arrived - started

            async def worker(chat_id: int) -> None:
                history: list[dict[str, Any]] = []
                for k in range(args.turns):
                    try:
                        async with asyncio.timeout(REPLY_TIMEOUT_S):
                            phase.latencies.append(await one_turn(chat_id, k, history))
                    except Exception as exc:
                        phase.problems.append(f"floor chat {chat_id} turn {k}: {exc!r}")
                        return

            await one_turn(WARMUP_USER, 0, [])  # warm-up, not measured
            requests_before = Counter(r.method for r in fake_tg.requests)
            model_before = len(fake_model.requests)
            phase.window.open()
            await asyncio.gather(*(worker(c) for c in chat_ids))
            phase.window.close()
            turns = max(phase.done, 1)
            sent = Counter(r.method for r in fake_tg.requests) - requests_before
            phase.counts["Bot API sendMessage"] = sent["sendMessage"] / turns
            phase.counts["model requests"] = (len(fake_model.requests) - model_before) / turns
            phase.rss_end_mb = rss_now_mb()
            phase.child_rss_mb = children_peak_rss_mb()
        if direct is not None:
            await direct.close()
        check_replies(phase, tap, chat_ids)
    return phase


# -- reporting ---------------------------------------------------------------------------------


def code_version() -> str:
    """The commit measured, and whether the work tree had changes on top of it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def limiter_bound(chats: int, turns: int) -> tuple[float, float]:
    """(steady turns/s, least wall time in s) that Palui's default sender limits allow this
    workload: replies to one chat >= 1 s apart, <= 30 replies in any 1 s (DESIGN §3)."""
    per_chat_s = max(turns - 1, 0) * 1.0  # a chat's first reply need not wait
    global_s = max(chats * turns - 30, 0) / 30.0  # the first 30 may go at once
    return (min(float(chats), 30.0), max(per_chat_s, global_s))


def report(
    args: argparse.Namespace, phases: list[Phase], started: float, baseline_rss: float
) -> None:
    print()
    print(f"Palui turn overhead - {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; database: {args.db}; code: {code_version()}"
    )
    print(
        f"workload: {args.chats} chats x {args.turns} turns (closed loop); each turn = "
        f"model call -> {TOOL} (stdio MCP) -> model call -> sendMessage"
    )
    print()
    head = (
        f"{'phase':34} {'turns':>6} {'turns/s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'CPU ms/turn':>12} {'+MCP child':>11} {'RSS MB':>7}  check"
    )
    print(head)
    print("-" * len(head))
    for p in phases:
        check = "ok" if p.ok else f"FAIL lost={p.lost} dup={p.duplicated} wrong={p.wrong}"
        print(
            f"{p.name:34} {p.done:6d} {p.turns_per_s:8.1f} {ms(p.pct(50))} {ms(p.pct(90))} "
            f"{ms(p.pct(99))} {ms(p.mean_s)} {p.cpu_ms_per_turn:12.2f} "
            f"{p.child_cpu_ms_per_turn:11.2f} {p.rss_end_mb:7.0f}  {check}"
        )
    print()
    print("per turn:")
    for p in phases:
        counts = ", ".join(f"{k} {v:.2f}" for k, v in p.counts.items())
        print(f"  {p.name:34} {counts}")
    print()
    by_name = {p.name: p for p in phases}
    floors = [p for p in (by_name.get(FLOOR_BEFORE), by_name.get(FLOOR_AFTER)) if p and p.done]
    free = by_name.get(PALUI_FREE)
    limited = by_name.get(PALUI_LIMITED)
    if floors and free and free.done:

        def floor_mean(value: Callable[[Phase], float]) -> float:
            return sum(value(f) for f in floors) / len(floors)

        p50 = free.pct(50) / floor_mean(lambda f: f.pct(50))
        p99 = free.pct(99) / floor_mean(lambda f: f.pct(99))
        mean = free.mean_s / floor_mean(lambda f: f.mean_s)
        floor_rate = floor_mean(lambda f: f.turns_per_s)
        cpu_floor = floor_mean(lambda f: f.cpu_ms_per_turn)
        cpu = free.cpu_ms_per_turn / cpu_floor
        print(f"Palui (send limits off) / floor (mean of before and after), {args.chats} chats:")
        verdict = "met" if p50 <= 1.5 else "NOT met"
        print(f"  per-turn time p50  {p50:6.2f}x   (target <= 1.5x: {verdict})")
        print(f"  per-turn time mean {mean:6.2f}x")
        print(f"  per-turn time p99  {p99:6.2f}x")
        print(
            f"  throughput         {floor_rate / free.turns_per_s:6.2f}x lower   "
            f"(floor {floor_rate:.1f} vs Palui {free.turns_per_s:.1f} turns/s)"
        )
        print(
            f"  CPU per turn       {cpu:6.2f}x   (this process: Palui + fakes vs floor + fakes; "
            f"{free.cpu_ms_per_turn - cpu_floor:.1f} ms more per turn)"
        )
        cores = free.window.cpu_s / free.window.wall_s if free.window.wall_s else 0
        print(f"  process CPU while Palui ran: {cores:.2f} of {os.cpu_count()} cores busy")
        if len(floors) == 2:
            spread = abs(floors[0].turns_per_s - floors[1].turns_per_s) / floor_rate
            warn = "  <- something else loaded the machine: rerun" if spread > 0.2 else ""
            print(f"  noise: the two floors differ by {100 * spread:.0f}% in turns/s{warn}")
    if limited and limited.done:
        bound_rate, least_s = limiter_bound(limited.chats, limited.turns)
        print()
        print("Production send limits (1 msg/s per chat, 30 msg/s overall):")
        print(
            f"  bound: <= {bound_rate:.0f} turns/s steady (min(chats x 1/s, 30/s)); this workload "
            f"needs >= {least_s:.1f} s for {limited.chats * limited.turns} turns; measured "
            f"{limited.turns_per_s:.1f} turns/s in {limited.window.wall_s:.1f} s"
        )
        if free and free.done:
            print(
                f"  with the limits on: {limited.turns_per_s / free.turns_per_s:.2f}x the "
                f"throughput and {limited.pct(50) / free.pct(50):.2f}x the p50 latency of "
                "limits off"
            )
            # A closed-loop chat does at most one turn per max(1 s, its turn time).
            turn_s = max(free.pct(50), 1.0)
            chat_bound = limited.chats / turn_s
            if limited.turns_per_s >= 0.8 * min(chat_bound, 30.0) and free.pct(50) < 1.0:
                what = "the per-chat limit (1 msg/s) is what bounds throughput here"
            elif limited.turns_per_s >= 0.8 * 30.0:
                what = "the global limit (30 msg/s) is what bounds throughput here"
            else:
                what = (
                    "Palui's own per-turn CPU (one event loop) is what bounds throughput here, "
                    "below the 30 msg/s the limits allow"
                )
            print(f"  => {what}")
    print()
    children = max((p.child_rss_mb for p in phases), default=float("nan"))
    print(
        f"peak RSS: {rss_peak_mb():.0f} MB this process (Palui + both fakes + floor clients, "
        f"all phases); {baseline_rss:.0f} MB before the first phase (imports, litellm, fakes); "
        f"an MCP notes server (child process) peaks at {children:.0f} MB"
    )
    lost = sum(p.lost for p in phases)
    dup = sum(p.duplicated for p in phases)
    wrong = sum(p.wrong for p in phases)
    verdict = "OK" if all(p.ok for p in phases) else "FAILED"
    print(
        f"replies: {verdict} - lost {lost}, duplicated {dup}, wrong/out of order {wrong} "
        f"(every chat must get exactly {args.turns} replies, in order, each echoing its message)"
    )
    for p in phases:
        for line in [*p.problems[:5], *p.notes]:
            print(f"  {p.name}: {line}")
    print(f"total run time {time.monotonic() - started:.1f} s")


# -- main --------------------------------------------------------------------------------------


async def warm_up_litellm(fake_model: Any) -> None:
    """Import litellm (seconds) and make one call, before anything is measured."""
    from palui.llm.via_litellm import import_litellm  # the global set-up Palui makes

    litellm = await asyncio.to_thread(import_litellm)
    await litellm.acompletion(
        model="openai/fake-model", api_base=fake_model.api_base, api_key=MODEL_KEY,
        messages=[{"role": "user", "content": "warm up"}], num_retries=0, max_retries=0,
    )  # fmt: skip


async def main_async(args: argparse.Namespace, workdir: Path) -> int:
    from tests.fakes.model_server import FakeModel

    started = time.monotonic()
    phases: list[Phase] = []
    profile = cProfile.Profile() if args.profile else None
    async with FakeModel() as fake_model:
        fake_model.brain = brain
        await warm_up_litellm(fake_model)
        baseline_rss = rss_now_mb()
        tools: list[dict[str, Any]] = []  # what Palui offers the model; the floor offers it too
        total = 3 if args.skip_limited else 4

        async def floor_before() -> None:
            # Runs while the first Palui app is up but idle (once it has shown its tool offer).
            # Floors before and after Palui's phase: other load on the machine shows up as a
            # difference between the two; the ratio uses their mean.
            print(f"[1/{total}] floor, before", flush=True)
            phases.append(await run_floor(args, workdir, fake_model, tools, FLOOR_BEFORE))
            fake_model.requests.clear()  # the fake keeps every request body; free them
            print(f"[2/{total}] palui, send limits off", flush=True)

        print(f"{args.chats} chats x {args.turns} turns, database {args.db}", flush=True)
        free = await run_palui(
            args, workdir, fake_model, limited=False, tools=tools, profile=profile,
            before=floor_before,
        )  # fmt: skip
        phases.append(free)
        fake_model.requests.clear()
        print(f"[3/{total}] floor, after", flush=True)
        phases.append(await run_floor(args, workdir, fake_model, tools, FLOOR_AFTER))
        fake_model.requests.clear()
        if not args.skip_limited:
            print(f"[4/{total}] palui, production send limits", flush=True)
            limited = await run_palui(args, workdir, fake_model, limited=True, tools=tools)
            phases.append(limited)
    report(args, phases, started, baseline_rss)
    if profile is not None:
        profile.dump_stats(args.profile)
        print(
            f"\nprofile of the 'send limits off' phase written to {args.profile}; top by own time:"
        )
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return 0 if all(p.ok for p in phases) else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Palui's per-turn overhead against a floor of direct calls (all on loopback)."
    )
    parser.add_argument("--chats", type=int, default=50, help="concurrent chats (default 50)")
    parser.add_argument("--turns", type=int, default=5, help="turns per chat (default 5)")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument(
        "--skip-limited", action="store_true", help="skip the phase with production send limits"
    )
    parser.add_argument("--profile", metavar="FILE", help="cProfile the 'send limits off' phase")
    parser.add_argument(
        "--statements", action="store_true", help="list each SQL statement's count per turn"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work dir (Palui's logs, SQLite files)"
    )
    args = parser.parse_args(argv)
    if args.chats < 1 or args.turns < 1:
        parser.error("--chats and --turns must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    guard_network()
    workdir = Path(tempfile.mkdtemp(prefix="palui-bench-"))
    cwd = Path.cwd()
    os.chdir(workdir)  # no config/palui.toml or kinds file of the repo is picked up
    status = 1
    try:
        status = asyncio.run(main_async(args, workdir))
        return status
    finally:
        os.chdir(cwd)
        if args.keep or status != 0:
            print(f"Palui's logs and SQLite databases are kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
