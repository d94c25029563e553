"""How long the first answer after start takes, measured from the moment Palui polls.

    python bench/first_answer.py [--runs 3] [--plain] [--no-stream]

Each run starts the real `palui run` as its own process against the fakes served from this one
(`bench/load.py`'s set-up: the fake Bot API, which here keeps Telegram's limits and knows
drafts, the fake OpenAI-compatible model answering at once, the notes MCP server and the bundled
recall server as Palui's children). Palui polls before the rest of it loads (what comes is
stored, answered once it serves); once it serves (its command menu is set), one person's message
is pushed; the time to the answer's sendMessage is the figure. `--later` answers follow for
comparison, each message sent once the chat's send slot is free again. By default the turn is
the load's read-tool turn (the model calls `mcp-notes__list_notes`, then answers); `--plain`
answers at once with no tool. The time from the process start to its first poll is printed
too. The summary gives the first answers and the later ones (p50 and max) and their ratio,
first over later, per run and in all.

Exit status: 0 when every first answer arrived within 1 s, else 1.
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
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load
import turn_overhead as common

TARGET_S = 1.0


def plain_brain(request: Any) -> Any:
    from tests.fakes.model_server import Script

    return Script(text=f"echo: {request.last_user_text}")


async def one_run(
    args: argparse.Namespace, workdir: Path, fake_model: Any
) -> tuple[float, float, list[float]]:
    """(seconds from the process start to its first poll, to the first answer, to each later
    answer — each later message sent once the chat's send slot is free again)."""
    from tests.fakes.telegram_api import FakeTelegram

    async with FakeTelegram() as fake_tg:
        fake_tg.drafts_supported = True
        fake_tg.keep_limits()
        tap = common.ReplyTap(fake_tg)
        user = common.FIRST_USER
        env = load.palui_env(workdir, fake_tg, fake_model, [user], None, args.palui_repo)
        env["PALUI_STREAM_REPLIES"] = "false" if args.no_stream else "true"
        env["PALUI_HTTP_PORT"] = "0"  # any free port: other daemons may run beside this one
        with (workdir / "palui.log").open("w", encoding="utf-8") as log:
            started = time.monotonic()
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "palui.cli", "run", env=env, cwd=workdir,
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                polled = await fake_tg.wait_for_request("getUpdates", timeout=load.START_TIMEOUT_S)
                # Polling starts before the rest of Palui loads; the menu is set once it serves,
                # warm: the first message is sent then, as a person would after a start.
                await fake_tg.wait_for_request("setMyCommands", timeout=load.START_TIMEOUT_S)
                waiter = tap.expect(user)
                pushed = time.monotonic()
                fake_tg.push_text(user, user, common.message_text(user, 0))
                async with asyncio.timeout(common.REPLY_TIMEOUT_S):
                    arrived, text = await waiter
                first = arrived - pushed
                later: list[float] = []
                for k in range(1, args.later + 1):
                    await asyncio.sleep(1.1)  # Telegram's pace: the chat's next slot is free
                    waiter = tap.expect(user)
                    pushed = time.monotonic()
                    fake_tg.push_text(user, user, common.message_text(user, k))
                    async with asyncio.timeout(common.REPLY_TIMEOUT_S):
                        arrived, text = await waiter
                    later.append(arrived - pushed)
                if "echo:" not in text:
                    print(f"  unexpected answer: {text[:120]!r}")
                if fake_tg.limit_rejections:
                    print(f"  Telegram's limits refused {len(fake_tg.limit_rejections)} sends")
            finally:
                process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), 60)
                except TimeoutError:
                    process.kill()
                    await process.wait()
    return polled.at - started, first, later


async def main_async(args: argparse.Namespace) -> int:
    from tests.fakes.model_server import FakeModel

    firsts: list[float] = []
    laters: list[float] = []
    async with FakeModel() as fake_model:
        fake_model.brain = plain_brain if args.plain else common.brain
        await common.warm_up_litellm(fake_model)  # this process's, not Palui's
        for run in range(args.runs):
            workdir = Path(tempfile.mkdtemp(prefix="palui-first-"))
            try:
                to_poll, first, later = await one_run(args, workdir, fake_model)
            finally:
                with contextlib.suppress(OSError):
                    shutil.rmtree(workdir)
            firsts.append(first)
            laters.extend(later)
            ratio = f" ({first / statistics.median(later):.2f}x their p50)" if later else ""
            print(
                f"run {run + 1}: start to first poll {to_poll:.1f} s, "
                f"first answer {first * 1000:.0f} ms{ratio}, later ones "
                + ", ".join(f"{t * 1000:.0f}" for t in later)
                + " ms"
            )
    turn = "plain answer" if args.plain else "read-tool turn"
    stream = "streaming off" if args.no_stream else "streaming on (drafts)"
    print(f"first answer after start ({turn}, {stream}), from Palui's first poll:")
    print(f"  first answers: {_spread(firsts)}; target {TARGET_S:g} s")
    if laters:
        print(f"  later answers: {_spread(laters)}")
        ratio = statistics.median(firsts) / statistics.median(laters)
        print(f"  first / later, p50 over p50: {ratio:.2f}x")
    return 0 if max(firsts) <= TARGET_S else 1


def _spread(seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return f"p50 {statistics.median(ms):.0f} ms, min {min(ms):.0f}, max {max(ms):.0f} (n={len(ms)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--plain", action="store_true", help="an answer with no tool call")
    parser.add_argument("--later", type=int, default=3, help="answers measured after the first")
    parser.add_argument("--no-stream", action="store_true", help="PALUI_STREAM_REPLIES=false")
    parser.add_argument("--palui-repo", type=Path, default=common.REPO)
    args = parser.parse_args(argv)
    common.guard_network()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
