"""kill -9 at random moments: is any message lost, any action repeated, any answer shown twice?

    python bench/kill_trials.py [--trials 30] [--seed N]
    python bench/kill_trials.py --procs 2 --db postgresql [--trials 20]
    python bench/kill_trials.py --fast [--trials 30 --parallel 2]

Each trial starts the real `palui run` (one process on SQLite in polling mode, or `--procs 2`
processes on one fresh PostgreSQL database in webhook mode, each update POSTed to one of them
at random, to the other if that one is down) against the fakes served from this process: the
fake Bot API (its visible chat state: messages after edits and deletes) and the fake model.
Streaming is on. Three chats send three messages each, the next when its answer shows; each
turn calls the write tool `mcp-notes__add_note` (the notes MCP server logs every execution in
its own file), then streams a ~40-word answer slowly (`--piece-delay`), so a kill lands
mid-stream, mid-call or between turns. After a random number of the bot's sends and edits (0 to
`--kill-events`) and a random fraction of a second, one process is killed with SIGKILL and
started again at once; the trial ends when every message is answered (or times out).

`--fast`: the model answers at once, so each answer is complete within the first second and
sent once, formatted, with no preview (the main path for fast answers); and the kill lands the
moment the fake Bot API has put a random answer in the chat, before Palui hears back (its
response is held), i.e. between the outbox's sendMessage and its record of the part. With
`--procs 2` the killed process is still a random one: when the held answer is the survivor's,
its sendMessage times out and is sent again by `TelegramChannel._call` (see PERFORMANCE).

Counted per trial, from outside Palui:
- lost: a message whose answer never became visible;
- repeated: an add_note the notes server's own log shows more than once;
- twice: an answer visible in two messages, or a leftover preview (part of an answer, a
  "(replaced below)" or a stopped note) beside the answers;
- failed: a failure message shown instead of (or beside) an answer.

Prints one line per trial and a summary; exit status 1 on any lost, repeated, twice or failed.
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
import random
import re
import shutil
import signal
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import turn_overhead as common  # the shared fakes' glue (network guard, databases)

CHATS = (3001, 3002, 3003)
MESSAGES = 3
TOOL = "mcp-notes__add_note"
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec")  # fmt: skip
FAILURE_MARKS = ("went wrong", "Nothing was run", "could not be reached", "model call failed",
                 "stopped")  # fmt: skip
SECRET = "kill-trials-webhook-secret-0123"
START_TIMEOUT_S = 600.0  # a loaded machine: palui run takes minutes to start
ANSWER_TIMEOUT_S = 900.0
SETTLE_S = 2.0  # after the last answer: time for a late duplicate to show


def question(chat: int, k: int) -> str:
    return f"q {chat}-{k}"


def answer(chat: int, k: int) -> str:
    return f"Answer {chat}-{k}: " + " ".join(WORDS * 2) + "."


def brain_for(piece_delay: float) -> Any:
    from tests.fakes.model_server import Script

    def brain(request: Any) -> Script:
        found = re.search(r"q (\d+)-(\d+)", request.last_user_text)
        if found is None:
            return Script(text="ok")  # e.g. a summary request
        chat, k = int(found[1]), int(found[2])
        if request.messages and request.messages[-1].get("role") == "tool":
            return Script(text=answer(chat, k), piece_delay=piece_delay)
        arguments = json.dumps({"title": f"note {chat}-{k}", "body": "kill trial"})
        return Script(tool_calls=[(TOOL, arguments)])

    return brain


@dataclass
class Trial:
    number: int
    lost: int = 0
    repeated: int = 0
    twice: int = 0
    failed: int = 0
    killed_at_s: float = 0.0
    at_kill: str = ""  # what the chats showed when the kill landed
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.repeated or self.twice or self.failed)


class Process:
    """One `palui run`; in webhook mode it listens on its own port."""

    def __init__(self, env: dict[str, str], workdir: Path, index: int, webhook: bool) -> None:
        self.env = dict(env)
        self.url = ""
        if webhook:
            port = free_port()
            self.url = f"http://127.0.0.1:{port}/telegram"
            self.env.update(
                PALUI_HTTP_PORT=str(port),
                PALUI_TELEGRAM_WEBHOOK_URL=self.url,
                PALUI_TELEGRAM_WEBHOOK_SECRET=SECRET,
            )
        self.log = workdir / f"palui-{index}.log"
        self.workdir = workdir
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self, fake_tg: Any) -> None:
        seen = len(fake_tg.requests)
        with self.log.open("a", encoding="utf-8") as log:
            log.write(f"\n----- start at {time.strftime('%H:%M:%S')} -----\n")
            log.flush()
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "palui.cli", "run", env=self.env, cwd=self.workdir,
                stdout=log, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip

        def ready() -> bool:  # polling: its first getUpdates; webhook: its setWebhook
            for request in fake_tg.requests[seen:]:
                if not self.url and request.method.lower() == "getupdates":
                    return True
                if self.url and request.params.get("url") == self.url:
                    return True
            return False

        async with asyncio.timeout(START_TIMEOUT_S):
            while not ready():
                if not self.alive:
                    raise RuntimeError(f"palui run exited at start; see {self.log}")
                await asyncio.sleep(0.1)

    async def kill9(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()

    async def stop(self) -> None:
        if not self.alive:
            return
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 60)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def palui_env(workdir: Path, fake_tg: Any, fake_model: Any, db_url: str | None) -> dict[str, str]:
    config = workdir / "palui.toml"
    config.write_text(
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(common.NOTES_SERVER))}]\n"
        'trust = "trusted"\n'
        'enable = ["add_note"]\n'
        f"env = {{ NOTES_FILE = {json.dumps(str(workdir / 'notes.json'))},"
        f" NOTES_LOG = {json.dumps(str(workdir / 'executions.jsonl'))} }}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALUI_")}
    env.update(
        {
            "PALUI_TELEGRAM_TOKEN": fake_tg.token,
            "PALUI_TELEGRAM_API_URL": fake_tg.url,
            "PALUI_ALLOWED_USERS": ",".join(str(c) for c in CHATS),
            "PALUI_MODEL": "openai/fake-model",
            "PALUI_MODEL_API_BASE": fake_model.api_base,
            "PALUI_MODEL_API_KEY": common.MODEL_KEY,
            "PALUI_DATA_DIR": str(workdir / "data"),
            "PALUI_CONFIG": str(config),
            "PALUI_KINDS_FILE": str(workdir / "no-kinds-file.yaml"),
            "PALUI_RUNS_PER_HOUR": "0",
            "PALUI_DAILY_TOKEN_CAP": "0",
            "PALUI_RECALL__ENABLED": "false",
            "PALUI_STREAM_REPLIES": "true",
            "PALUI_HTTP_PORT": "0",
            # Not the limit under test: on a loaded machine a turn may take minutes.
            "PALUI_TURN_TIMEOUT_S": "900",
            "PYTHONPATH": str(common.REPO),
        }
    )
    if db_url:
        env["PALUI_DATABASE_URL"] = db_url
    return env


async def deliver(fake_tg: Any, procs: list[Process], update_id: int, rng: random.Random) -> None:
    """Webhook mode: POST the update to a random process, to another while that one is down,
    until one accepts it (Telegram retries an update until a 2xx)."""
    if not procs[0].url:
        return  # polling: the update waits in the fake for getUpdates
    async with asyncio.timeout(ANSWER_TIMEOUT_S):
        while True:
            target = rng.choice(procs)
            if target.alive:
                # A process killed mid-request: Telegram retries the update until a 2xx.
                with contextlib.suppress(OSError, asyncio.TimeoutError, aiohttp.ClientError):
                    status = await fake_tg.deliver_to_webhook(update_id, url=target.url)
                    if 200 <= status < 300:
                        return
            await asyncio.sleep(0.2)


def visible(fake_tg: Any, chat: int, *, final: bool = True) -> list[str]:
    """The chat's visible texts; `final`: a preview counts only once the answer has been
    written into it formatted (a preview may already show the whole text, unfinished)."""
    finals = fake_tg.__dict__.setdefault("finals", set())
    return [
        m.get("text", "")
        for m in fake_tg.visible_messages(chat)
        if not final
        or (chat, m["message_id"]) in finals
        or not m.get("text", "").startswith("Answer")
    ]


def watch_finals(fake_tg: Any) -> None:
    """Note each message written with parse_mode HTML: the formatted answer, not a preview."""
    from tests.fakes.telegram_chats import ApiError

    finals: set[tuple[int, int]] = fake_tg.__dict__.setdefault("finals", set())
    handlers = fake_tg._handlers  # the fake has no hook for this; wrap its handlers

    def wrap(method: str) -> None:
        original = handlers[method]

        def handler(params: dict[str, Any]) -> Any:
            try:
                result = original(params)
            except ApiError as error:
                # The formatted answer equal to the plain preview showing it already: Telegram
                # says "not modified", and the outbox counts it delivered; so does this.
                if params.get("parse_mode") == "HTML" and "not modified" in error.description:
                    finals.add((int(params["chat_id"]), int(params["message_id"])))
                raise
            if params.get("parse_mode") == "HTML":
                message_id = params.get("message_id") or result["message_id"]
                finals.add((int(params["chat_id"]), int(message_id)))
            return result

        handlers[method] = handler

    wrap("sendmessage")
    wrap("editmessagetext")


async def chat_loop(fake_tg: Any, procs: list[Process], chat: int, rng: random.Random) -> None:
    for k in range(MESSAGES):
        update_id = fake_tg.push_text(chat, chat, question(chat, k))
        await deliver(fake_tg, procs, update_id, rng)
        await answered(fake_tg, chat, answer(chat, k))


async def answered(fake_tg: Any, chat: int, wanted: str) -> None:
    """Until `wanted` shows in the chat: the fake's own wait, woken by each Bot API call."""
    await fake_tg._wait(
        lambda: wanted in visible(fake_tg, chat), 10 * ANSWER_TIMEOUT_S, lambda: wanted
    )


def hold_an_answer(fake_tg: Any, nth: int) -> asyncio.Event:
    """Set once the `nth` answer sent is in the chat; its response is never given."""
    seen = 0

    def nth_answer(params: dict[str, Any]) -> bool:
        nonlocal seen
        seen += str(params.get("text", "")).startswith("Answer")
        return seen == nth

    return fake_tg.hold_answer("sendMessage", nth_answer)  # type: ignore[no-any-return]


def writes(fake_tg: Any) -> int:
    """The bot's sends, edits and deletes so far."""
    methods = {"sendmessage", "editmessagetext", "deletemessage"}
    return sum(1 for request in fake_tg.requests if request.method.lower() in methods)


def shown_at_kill(fake_tg: Any) -> str:
    """How many answers and previews (partial answers) were visible when the kill landed."""
    answers = previews = 0
    for chat in CHATS:
        full = {answer(chat, k) for k in range(MESSAGES)}
        for text in visible(fake_tg, chat, final=False):
            answers += text in full
            previews += text not in full and text.startswith("Answer")
    return f"{answers} answers, {previews} previews shown"


def count(trial: Trial, fake_tg: Any, workdir: Path) -> None:
    log = workdir / "executions.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    runs = Counter(json.loads(line)["arguments"]["title"] for line in lines)
    for title, n in runs.items():
        if n > 1:
            trial.repeated += n - 1
            trial.notes.append(f"{title} ran {n} times")
    for chat in CHATS:
        texts = visible(fake_tg, chat, final=False)
        answers = [answer(chat, k) for k in range(MESSAGES)]
        for k, text in enumerate(answers):
            shown = texts.count(text)
            if shown == 0:
                trial.lost += 1
                trial.notes.append(f"chat {chat} message {k}: no answer")
            elif shown > 1:
                trial.twice += shown - 1
                trial.notes.append(f"chat {chat} message {k}: answer shown {shown} times")
        for text in texts:
            if text in answers:
                continue
            if any(mark in text for mark in FAILURE_MARKS) and not text.startswith("Answer"):
                trial.failed += 1
            else:
                trial.twice += 1  # a preview (or its placeholder) beside the answers
            trial.notes.append(f"chat {chat} shows {text[:70]!r}")


async def run_trial(
    args: argparse.Namespace, number: int, fake_model: Any, rng: random.Random
) -> Trial:
    from tests.fakes.telegram_api import FakeTelegram

    trial = Trial(number)
    workdir = Path(tempfile.mkdtemp(prefix=f"palui-kill-{number}-"))
    (workdir / "notes.json").write_text("{}")
    async with FakeTelegram() as fake_tg, common.database(args.db, workdir, "kill") as url:
        watch_finals(fake_tg)
        env = palui_env(workdir, fake_tg, fake_model, url)
        procs = [Process(env, workdir, i, args.procs > 1) for i in range(args.procs)]
        try:
            await asyncio.gather(*(proc.start(fake_tg) for proc in procs))
            started = time.monotonic()
            chats = asyncio.gather(*(chat_loop(fake_tg, procs, c, rng) for c in CHATS))
            if args.fast:
                held = hold_an_answer(fake_tg, rng.randint(1, len(CHATS) * MESSAGES))
                shown = asyncio.ensure_future(held.wait())
            else:
                # The kill lands after a random number of the bot's sends and edits (so
                # mid-stream as often as streams take the time), plus a random fraction of
                # a second.
                events = rng.randint(0, args.kill_events)
                wait = fake_tg._wait(lambda: writes(fake_tg) >= events, 10 * ANSWER_TIMEOUT_S, str)
                shown = asyncio.ensure_future(wait)
            await asyncio.wait([chats, shown], return_when=asyncio.FIRST_COMPLETED)
            shown.cancel()
            jitter = 0.0 if args.fast else rng.uniform(0, args.kill_jitter)
            done, _ = await asyncio.wait([chats], timeout=jitter)
            victim = rng.choice(procs)
            trial.killed_at_s = time.monotonic() - started
            trial.at_kill = shown_at_kill(fake_tg)
            await victim.kill9()
            if done:
                trial.notes.append("killed after the last answer")
            await asyncio.sleep(rng.uniform(0, args.restart_within))
            await victim.start(fake_tg)
            try:
                await asyncio.wait_for(chats, ANSWER_TIMEOUT_S)
            except TimeoutError:
                trial.notes.append(f"timed out after {ANSWER_TIMEOUT_S:g} s")
            await asyncio.sleep(SETTLE_S)
        finally:
            for proc in procs:
                await proc.stop()
        count(trial, fake_tg, workdir)
    if trial.ok and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        trial.notes.append(f"work dir: {workdir}")
    return trial


async def main_async(args: argparse.Namespace) -> int:
    from tests.fakes.model_server import FakeModel

    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    db = "PostgreSQL" if args.db == "postgresql" else "SQLite"
    print(f"{args.trials} trials, {args.procs} process(es), {db}, seed {seed}", flush=True)
    trials: list[Trial] = []
    started = time.monotonic()
    async with FakeModel() as fake_model:
        fake_model.brain = brain_for(0.0 if args.fast else args.piece_delay)
        slots = asyncio.Semaphore(args.parallel)

        async def one(number: int) -> None:
            async with slots:
                # Each trial its own generator: a seed replays the same kills in any order.
                trial = await run_trial(args, number, fake_model, random.Random(seed + number))
            trials.append(trial)
            mark = "ok  " if trial.ok else "FAIL"
            print(
                f"{mark} trial {number:3d}: killed at {trial.killed_at_s:5.1f} s ({trial.at_kill})"
                f"  lost {trial.lost} repeated {trial.repeated} twice {trial.twice}"
                f" failed {trial.failed}",
                flush=True,
            )
            for note in trial.notes[:6]:
                print(f"       {note}", flush=True)

        await asyncio.gather(*(one(n) for n in range(1, args.trials + 1)))
    total = {k: sum(getattr(t, k) for t in trials) for k in ("lost", "repeated", "twice", "failed")}
    bad = sum(1 for t in trials if not t.ok)
    print(
        f"\nkill -9 trials: {len(trials)} ({args.procs} process(es), {db}, streaming on, "
        f"{'fast answers, killed as an answer is accepted, ' if args.fast else ''}"
        f"{len(CHATS)} chats x {MESSAGES} messages, write tool each): "
        f"lost {total['lost']}, actions repeated {total['repeated']}, "
        f"answers shown twice {total['twice']}, failed {total['failed']}; "
        f"{bad} trial(s) failed ({time.monotonic() - started:.0f} s, seed {seed})"
    )
    return 1 if bad else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--procs", type=int, choices=(1, 2), default=1)
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--piece-delay", type=float, default=0.05, help="s between words")
    parser.add_argument("--kill-events", type=int, default=30,
                        help="kill after 0..N of the bot's sends and edits")  # fmt: skip
    parser.add_argument("--kill-jitter", type=float, default=0.5, help="then 0..s more")
    parser.add_argument("--restart-within", type=float, default=1.0)
    parser.add_argument("--parallel", type=int, default=1, help="trials run side by side")
    parser.add_argument("--keep", action="store_true", help="keep every trial's work dir")
    parser.add_argument("--fast", action="store_true",
                        help="answers at once; kill as Telegram accepts one")  # fmt: skip
    args = parser.parse_args(argv)
    if args.procs > 1 and args.db == "sqlite":
        parser.error("--procs 2 shares one PostgreSQL database: add --db postgresql")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    common.guard_network()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
