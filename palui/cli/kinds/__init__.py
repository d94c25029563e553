"""`palui kinds list|explain|draft|propose`: every tool's class, where it came from, a kinds file
draft, and the configured model's proposals for the tools Palui could not tell.

These commands connect to the configured connectors themselves (every `[mcp.*]` server and
recall, built as `palui.app` builds them) and add Palui's built-in tools: no running daemon, no
Telegram token and no model are needed (`propose` alone asks the model, configured as for
`palui run`). The bundled recall server runs on an in-memory file, so
its real file is neither created nor upgraded. The database is optional: when it exists and is
migrated, the switches and classes set in the chat are read from it (never written); otherwise
the tools are classified without them and each tool shows the switch it would start with.

Exit codes: 0 fine, 1 a problem (a connector that did not connect, an unknown tool, a file in
the way), 2 bad configuration (raised as ConfigError to `palui.cli.main`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TextIO

from palui.config import load_settings
from palui.logs import configure_logging

DEFAULT_DRAFT_PATH = Path("config/tool_kinds.draft.yaml")


def add_kinds_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `palui kinds …` on the top-level subparsers."""
    kinds = sub.add_parser(
        "kinds",
        help="show each tool's class and where it came from; draft a kinds file",
        description="Connects to the configured connectors (no daemon or token needed; only "
        "`propose` asks the model).",
    )
    commands = kinds.add_subparsers(dest="kinds_command", required=True)
    listing = commands.add_parser("list", help="every tool with its class, source and switch")
    listing.add_argument("--json", action="store_true", help="one JSON object per tool and line")
    explain = commands.add_parser("explain", help="how one tool got its class, step by step")
    explain.add_argument("tool", help="the tool's full name, e.g. mcp-notes__add_note")
    draft = commands.add_parser("draft", help="write a tool_kinds.yaml for you to review")
    draft.add_argument(
        "--output",
        "-o",
        type=Path,
        default=None,
        help=f"where to write it (default {DEFAULT_DRAFT_PATH})",
    )
    draft.add_argument("--force", action="store_true", help="overwrite the file if it exists")
    commands.add_parser(
        "propose",
        help="ask the model to propose kinds for unsure tools (written as source: assistant)",
        description="Asks the configured model about each tool Palui could not tell and writes "
        "its proposals to the kinds file; they count only where stricter until you confirm them.",
    )


def run_kinds(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run one `palui kinds` command. A ConfigError propagates (the caller exits 2)."""
    out = out or sys.stdout
    err = err or sys.stderr
    settings = load_settings(args.config)
    # The connectors' own lines (connected, errored, retrying) would only repeat the report.
    level = "debug" if settings.log_level == "debug" else "error"
    configure_logging(settings.log_format, level, settings.secrets())
    # The commands build the connectors as the daemon does (palui.app's builders, MCP, the
    # catalog): imported when one runs, not when `palui` registers its parsers, so `palui run`
    # and every other command start without them.
    from palui.cli.kinds.draft import kinds_draft
    from palui.cli.kinds.explain import kinds_explain
    from palui.cli.kinds.propose import kinds_propose
    from palui.cli.kinds.report import kinds_list

    if args.kinds_command == "draft":
        return asyncio.run(kinds_draft(settings, args.output, args.force, out, err))
    if args.kinds_command == "propose":
        return asyncio.run(kinds_propose(settings, out, err))
    if args.kinds_command == "list":
        return asyncio.run(kinds_list(settings, out, err, as_json=args.json))
    return asyncio.run(kinds_explain(settings, args.tool, out, err))


__all__ = ["DEFAULT_DRAFT_PATH", "add_kinds_parser", "run_kinds"]
