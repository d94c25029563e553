"""`palui` command line: run, migrate, chat, doctor, kinds, runs, skills.

Exit codes: 0 fine, 1 a problem found at run time (doctor, database), 2 bad configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from palui.cli.kinds import add_kinds_parser, run_kinds
from palui.cli.runs import add_runs_parser, run_runs
from palui.cli.skills import add_skills_parser, run_skills
from palui.config import Settings, load_settings
from palui.errors import ConfigError, PaluiError
from palui.logs import configure_logging
from palui.webhooks.specs import load_webhooks

# litellm downloads a price map at import unless told otherwise; Palui never needs the network
# for that, so this is set before anything can import litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Opt in to python-telegram-bot's future RetryAfter.retry_after type (a timedelta) now, instead
# of a deprecation warning on every flood wait.
os.environ.setdefault("PTB_TIMEDELTA", "1")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="palui", description="A Telegram agent you can trust.")
    parser.add_argument("--config", type=Path, help="path of palui.toml (or PALUI_CONFIG)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the daemon (migrates the database first)")
    sub.add_parser("migrate", help="bring the database schema up to date")
    sub.add_parser("chat", help="talk to Palui in this terminal")
    sub.add_parser("doctor", help="check the set-up and say how to fix what is wrong")
    recall = sub.add_parser("recall-server", help="run the bundled recall (memory) MCP server")
    recall.add_argument("--db", help="its SQLite file (default: $PALUI_DATA_DIR/recall.db)")
    recall.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP, not stdio")
    add_kinds_parser(sub)
    add_runs_parser(sub)
    add_skills_parser(sub)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(args.config)
    configure_logging(settings.log_format, settings.log_level, settings.secrets())
    return settings


# The daemon (palui.app: Telegram, aiohttp, the chat engine) and the database are imported by
# the commands that use them, so `palui kinds`, `palui doctor` and `--help` start quickly.


async def _run(settings: Settings) -> None:
    from palui.app.start import run  # Telegram polled first, the rest of Palui imported after

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await run(settings, stop)


async def _migrate(settings: Settings) -> None:
    from palui.db import Database

    db = Database(settings.resolved_database_url)
    try:
        await db.migrate()
        current, _head = await db.revisions()
        print(f"{db.kind} database is at revision {current}.")
    finally:
        await db.close()


async def _chat(settings: Settings) -> None:
    from palui.app.root import Palui

    async with Palui(settings) as app:
        await app.chat_console(input)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "doctor":
            from palui.cli.doctor import run_doctor

            return asyncio.run(run_doctor(args.config))
        if args.command == "recall-server":
            from palui.recall_server import main as recall_main

            extra = [
                *(["--db", args.db] if args.db else []),
                *(["--http", args.http] if args.http else []),
            ]
            return recall_main(extra)
        if args.command == "kinds":
            return run_kinds(args)
        if args.command == "runs":
            return run_runs(args)
        if args.command == "skills":
            return run_skills(args)
        settings = _settings(args)
        if args.command == "run":
            settings.require("telegram_token", "allowed_users", "model")
            load_webhooks(settings)  # secrets and exposure are checked before anything starts
            asyncio.run(_run(settings))
        elif args.command == "migrate":
            asyncio.run(_migrate(settings))
        elif args.command == "chat":
            settings.require("model")
            asyncio.run(_chat(settings))
    except ConfigError as exc:
        print(f"palui: {exc}", file=sys.stderr)
        return 2
    except PaluiError as exc:
        print(f"palui: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
