"""One fault at a time under a steady load: is anything lost, shown twice or run twice, and how
soon is every waiting chat answered once the fault clears?

    python bench/chaos.py [--faults telegram,model,database,kill] [--fault-s 30]

Each trial starts the real `palui run` against the fakes served from this process (as
bench/kill_trials.py, whose glue it reuses): the fake Bot API, the fake model, the notes MCP
server logging every execution. Three chats send three messages each, the next when its answer
shows; each turn calls the write tool `mcp-notes__add_note`, then answers. One fault per trial,
started once the first answers are in:

- `model`: one process on SQLite; the model answers every request (the probe's too) with 503
  for `--fault-s`;
- `telegram`: one process on SQLite, polling; the fake Bot API fails every request (getUpdates
  and sends alike) for `--fault-s`, in turn with 502 Bad Gateway, a hang past the client's
  timeout and 429 with `retry_after` (tests/fakes/telegram_outage.py); none is carried out;
- `database`: one process on PostgreSQL reached through a TCP relay (tests/fakes/tcp_cut.py)
  that drops every connection and refuses new ones for `--fault-s` (a restart or a network cut,
  without touching the shared server);
- `kill`: two processes on one PostgreSQL database in webhook mode, `kill -9` of one (not
  restarted): the survivor takes its chats over (process heartbeats).

Printed per trial: lost, twice (an answer shown more than once, or a chat's answers out of
order), repeated, failed (a failure message shown), told (the outage notice, once per chat at
most), the time from the fault clearing (for `kill`: from the kill) until every chat waiting at
that moment was answered, and for `kill` that time per chat as the takeover's p50/p95.
"""

from __future__ import annotations

import os
import sys

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["PTB_TIMEDELTA"] = "1"

import argparse
import asyncio
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kill_trials as kt  # the real `palui run` against the fakes
import turn_overhead as common

TOLD = "The model isn't answering right now"


@dataclass
class Result:
    fault: str
    lost: int = 0
    twice: int = 0
    repeated: int = 0
    failed: int = 0
    told: int = 0
    recovery_s: float = float("nan")
    takeovers: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    user, _, _ = parts.netloc.rpartition("@")
    return urlunsplit(
        parts._replace(netloc=f"{user}@127.0.0.1:{port}" if user else f"127.0.0.1:{port}")
    )


def waiting(fake_tg: Any, sent: dict[int, int]) -> list[int]:
    """Chats whose last message sent has no answer shown yet."""
    return [
        chat for chat, k in sent.items()
        if k < kt.MESSAGES and kt.answer(chat, k) not in kt.visible(fake_tg, chat)
    ]  # fmt: skip


async def trial(args: argparse.Namespace, fault: str, fake_model: Any) -> Result:
    from tests.fakes.tcp_cut import CuttableRelay
    from tests.fakes.telegram_api import FakeTelegram

    result = Result(fault)
    rng = random.Random(7)
    workdir = Path(tempfile.mkdtemp(prefix=f"palui-chaos-{fault}-"))
    (workdir / "notes.json").write_text("{}")
    db_kind = "sqlite" if fault in ("model", "telegram") else "postgresql"
    relay: CuttableRelay | None = None
    async with FakeTelegram() as fake_tg, common.database(db_kind, workdir, "chaos") as url:
        kt.watch_finals(fake_tg)
        if fault == "database":
            assert url is not None
            parts = urlsplit(url)
            relay = CuttableRelay(parts.hostname or "127.0.0.1", parts.port or 5432)
            await relay.start()
            url = through(url, relay.port)
        env = kt.palui_env(workdir, fake_tg, fake_model, url)
        procs = [
            kt.Process(env, workdir, i, fault == "kill") for i in range(2 if fault == "kill" else 1)
        ]
        sent = dict.fromkeys(kt.CHATS, 0)

        async def chat_loop(chat: int) -> None:
            for k in range(kt.MESSAGES):
                sent[chat] = k
                update_id = fake_tg.push_text(chat, chat, kt.question(chat, k))
                await kt.deliver(fake_tg, procs, update_id, rng)
                await kt.answered(fake_tg, chat, kt.answer(chat, k))
            sent[chat] = kt.MESSAGES
            fake_tg._changed()  # wakes the wait for every chat's last answer

        try:
            await asyncio.gather(*(proc.start(fake_tg) for proc in procs))
            chats = asyncio.gather(*(chat_loop(c) for c in kt.CHATS))
            await fake_tg._wait(lambda: sum(sent.values()) >= 2, kt.ANSWER_TIMEOUT_S, str)
            healthy = fake_model.brain
            if fault == "kill":
                await procs[0].kill9()
                cleared = time.monotonic()
            else:
                outage = fake_tg.fail() if fault == "telegram" else None
                if fault == "model":
                    fake_model.brain = lambda request: kt_script(status=503, error="down")
                elif relay is not None:
                    relay.cut()
                await asyncio.sleep(args.fault_s)
                if outage is not None:
                    outage.end()
                    result.notes += (f"Telegram failed: {outage.summary()}",)
                fake_model.brain = healthy
                if relay is not None:
                    relay.restore()
                cleared = time.monotonic()
            pending = waiting(fake_tg, sent)
            result.notes += tuple(
                f"chat {c} waiting for answer {sent[c]} at the fault's end" for c in pending
            )
            answered_at: dict[int, float] = {}
            wanted_of = {chat: kt.answer(chat, sent[chat]) for chat in pending}
            try:
                for chat, wanted in wanted_of.items():
                    await fake_tg._wait(
                        lambda w=wanted, c=chat: w in kt.visible(fake_tg, c), args.wait_s, str
                    )
                    answered_at[chat] = time.monotonic() - cleared
                await fake_tg._wait(
                    lambda: all(n >= kt.MESSAGES for n in sent.values()), args.wait_s, str
                )
            except TimeoutError:
                # Never recovered: counted as lost below, with what each chat shows.
                chats.cancel()
                for chat in kt.CHATS:
                    shown = [t[:40] for t in kt.visible(fake_tg, chat, final=False)]
                    result.notes += (f"timed out; chat {chat} sent {sent[chat]}, shows {shown}",)
            result.recovery_s = max(answered_at.values(), default=float("nan"))
            if fault == "kill":
                result.takeovers = tuple(sorted(answered_at.values()))
            if not chats.done():
                chats.cancel()
            # The messages sent after the fault are delayed too (a poll hung in it, say).
            last = time.monotonic() - cleared
            result.notes += (f"every chat's last answer {last:.1f} s after the fault",)
            await asyncio.sleep(kt.SETTLE_S)
        finally:
            for proc in procs:
                await proc.stop()
            if relay is not None:
                await relay.close()
        tally(result, fake_tg, workdir)
    if args.keep:
        print(f"  work dir: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def kt_script(**fields: Any) -> Any:
    from tests.fakes.model_server import Script

    return Script(**fields)


def tally(result: Result, fake_tg: Any, workdir: Path) -> None:
    """kill_trials' count, with the outage notice counted apart (it is no answer twice)."""
    for chat in kt.CHATS:
        result.told += sum(TOLD in text for text in kt.visible(fake_tg, chat, final=False))
    counted = kt.Trial(0)
    kt.count(counted, fake_tg, workdir)
    result.lost, result.repeated, result.failed = counted.lost, counted.repeated, counted.failed
    result.twice = counted.twice - result.told  # count() sees the notice as an extra message
    result.notes += tuple(note for note in counted.notes if TOLD not in note)
    for chat in kt.CHATS:  # in order per chat: each answer after the one before it
        texts = kt.visible(fake_tg, chat, final=False)
        answers = [kt.answer(chat, k) for k in range(kt.MESSAGES)]
        shown = [texts.index(text) for text in answers if text in texts]
        if shown != sorted(shown):
            result.twice += 1
            result.notes += (f"chat {chat}: answers out of order",)


def percentile(values: tuple[float, ...], q: float) -> float:
    if not values:
        return float("nan")
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if len(values) > 1
        else values[0]
    )


async def main_async(args: argparse.Namespace) -> int:
    from tests.fakes.model_server import FakeModel

    bad = 0
    async with FakeModel() as fake_model:
        fake_model.brain = kt.brain_for(0.0)
        for fault in args.faults.split(","):
            started = time.monotonic()
            r = await trial(args, fault, fake_model)
            line = (
                f"{fault:9s} lost {r.lost} twice {r.twice} repeated {r.repeated} failed {r.failed}"
                f" told {r.told}; every waiting chat answered {r.recovery_s:.1f} s after the fault"
                f" {'(the kill)' if fault == 'kill' else 'cleared'}"
            )
            if r.takeovers:
                p50, p95 = percentile(r.takeovers, 50), percentile(r.takeovers, 95)
                line += f"; takeover p50 {p50:.1f} s p95 {p95:.1f} s"
            print(f"{line}  [{time.monotonic() - started:.0f} s]", flush=True)
            for note in r.notes[:12]:
                print(f"    {note}", flush=True)
            bad += bool(r.lost or r.twice or r.repeated or r.failed)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", default="model,database,kill")
    parser.add_argument("--fault-s", type=float, default=30.0)
    parser.add_argument(
        "--wait-s", type=float, default=900.0, help="give up waiting for the answers after this"
    )
    parser.add_argument("--keep", action="store_true", help="keep each trial's work dir")
    args = parser.parse_args(argv)
    common.guard_network()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
