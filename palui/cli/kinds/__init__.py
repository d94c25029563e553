"""`palui kinds list|explain|draft`: every tool's class, where it came from, and a kinds file draft.

These commands connect to the configured connectors themselves (every `[mcp.*]` server and
recall, built as `palui.app` builds them) and add Palui's built-in tools: no running daemon, no
Telegram token and no model are needed. The bundled recall server runs on an in-memory file, so
its real file is neither created nor upgraded. The database is optional: when it exists and is
migrated, the switches and classes set in the chat are read from it (never written); otherwise
the tools are classified without them and each tool shows the switch it would start with.

Exit codes: 0 fine, 1 a problem (a connector that did not connect, an unknown tool, a file in
the way), 2 bad configuration (raised as ConfigError to `palui.cli.main`).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from palui.config import Settings, load_settings
from palui.domain import RECALL_ID, ConnectorState
from palui.errors import PaluiError
from palui.logs import configure_logging
from palui.policy.annotations import read_marks, weigh
from palui.policy.classes import ClassSource, ToolClass
from palui.policy.inference import Inference, infer
from palui.policy.kinds_file import KindEntry, KindsFile, draft_kinds_file, parse_kinds_file
from palui.tools.builtins import CONNECTOR_ID as BUILTIN_ID
from palui.tools.builtins import TOOLS as BUILTIN_TOOLS
from palui.tools.catalog import CatalogEntry, Globs, StoredTool, ToolCatalog
from palui.tools.names import split_name

if TYPE_CHECKING:
    from palui.connectors import ConnectorManager

DEFAULT_DRAFT_PATH = Path("config/tool_kinds.draft.yaml")
RECALL_LOOK_DB = ":memory:"  # the bundled recall server's file while `palui kinds` looks
_CONNECTOR_NOTES = {BUILTIN_ID: "built in", RECALL_ID: "long-term memory"}
_CLASS_HINTS = (
    "readOnlyHint",
    "read_only_hint",
    "destructiveHint",
    "destructive_hint",
    "consequentialHint",
    "consequential_hint",
)
_OTHER_HINTS = ("idempotentHint", "idempotent_hint", "openWorldHint", "open_world_hint", "title")
_SOURCE_WORDS = {
    ClassSource.YOU: "you",
    ClassSource.ASSISTANT: "an assistant (kept by you)",
    ClassSource.ANNOTATION: "the server's annotations",
    ClassSource.INFERRED: "inference",
    ClassSource.UNSURE: "nothing: unsure, so destructive",
}


# -- the command line ------------------------------------------------------------------------


def add_kinds_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `palui kinds …` on the top-level subparsers."""
    kinds = sub.add_parser(
        "kinds",
        help="show each tool's class and where it came from; draft a kinds file",
        description="Connects to the configured connectors (no daemon, token or model needed).",
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
    if args.kinds_command == "draft":
        return asyncio.run(kinds_draft(settings, args.output, args.force, out, err))
    if args.kinds_command == "list":
        return asyncio.run(kinds_list(settings, out, err, as_json=args.json))
    return asyncio.run(kinds_explain(settings, args.tool, out, err))


def _no_mcp_servers(settings: Settings) -> str:
    where = settings.config or "config/palui.toml"
    return (
        "palui kinds: no MCP servers are configured; these are Palui's own tools only.\n"
        f"Add an MCP server to {where} (or point PALUI_CONFIG at a palui.toml), e.g.\n"
        "\n"
        "  [mcp.notes]                  # connector mcp-notes; tools appear as mcp-notes__<tool>\n"
        '  command = "python"           # stdio; or url = "https://…/mcp"\n'
        '  args = ["-m", "notes_server"]\n'
    )


# -- looking at every connector --------------------------------------------------------------


@dataclass(slots=True)
class ConnectorReport:
    id: str
    state: ConnectorState
    error: str | None
    entries: list[CatalogEntry] = field(default_factory=list)
    paused: bool = False  # paused in palui.toml: listed here, but none of its tools is offered

    @property
    def note(self) -> str | None:
        """What kind of connector it is, when not an `[mcp.*]` server."""
        return _CONNECTOR_NOTES.get(self.id)

    @property
    def failed(self) -> bool:
        return self.state is not ConnectorState.CONNECTED

    @property
    def problem(self) -> str:
        if self.state is ConnectorState.CONNECTING:
            last = f" (last error: {self.error})" if self.error else ""
            return f"did not finish connecting in time{last}"
        return self.error or "did not connect"


@dataclass(slots=True)
class Survey:
    kinds: KindsFile | None
    kinds_path: Path
    database: StoredState
    globs: dict[str, Globs]
    reports: list[ConnectorReport]

    @property
    def entries(self) -> list[CatalogEntry]:
        return [entry for report in self.reports for entry in report.entries]

    @property
    def failed(self) -> list[ConnectorReport]:
        return [report for report in self.reports if report.failed]

    @property
    def exit_code(self) -> int:
        return 1 if self.failed or self.database.failed else 0


def connector_ids(settings: Settings) -> set[str]:
    """Every connector Palui would run with these settings."""
    ids = {f"mcp-{slug}" for slug in settings.mcp} | {BUILTIN_ID}
    return ids | {RECALL_ID} if settings.recall.enabled else ids


async def survey(settings: Settings, only: set[str] | None = None) -> Survey:
    """Connect to the connectors (all, or those in `only`), classify every tool the way the
    daemon does (`palui.app`'s builders, the same catalog), disconnect."""
    from palui.app import build_catalog, build_connectors, load_kinds, switch_globs

    kinds = load_kinds(settings)
    database = await stored_tools(settings)
    globs = switch_globs(settings)
    catalog = build_catalog(settings, kinds, database.tools)

    def wanted(connector_id: str) -> bool:
        return only is None or connector_id in only

    # A paused connector is still asked for its tools: listing them calls none of them, and
    # the operator may want to classify them before switching the connector back on.
    chosen = {
        slug: server.model_copy(update={"paused": False})
        for slug, server in settings.mcp.items()
        if wanted(f"mcp-{slug}")
    }
    recall = settings.recall
    if not wanted(RECALL_ID):
        recall = recall.model_copy(update={"enabled": False})
    looked_at = settings.model_copy(update={"mcp": chosen, "recall": recall})
    paused = {f"mcp-{slug}" for slug, server in settings.mcp.items() if server.paused}
    manager = build_connectors(looked_at, recall_db=RECALL_LOOK_DB)
    try:
        await manager.start()
        reports = _reports(manager, catalog, paused)
    finally:
        await manager.stop()
    if wanted(BUILTIN_ID):  # always there, nothing to connect to
        entries = [catalog.entry(BUILTIN_ID, tool) for tool in BUILTIN_TOOLS]
        reports.append(ConnectorReport(BUILTIN_ID, ConnectorState.CONNECTED, None, entries))
    return Survey(kinds, settings.kinds_file, database, globs, sorted(reports, key=_report_order))


def _report_order(report: ConnectorReport) -> tuple[bool, str]:
    return (report.note is not None, report.id)  # the `[mcp.*]` servers, then Palui's own


def _reports(
    manager: ConnectorManager, catalog: ToolCatalog, paused: set[str]
) -> list[ConnectorReport]:
    reports = []
    for connector in manager.connectors():
        status = connector.status()
        entries = [catalog.entry(connector.id, tool) for tool in connector.tools()]
        report = ConnectorReport(
            connector.id, status.state, status.error, entries, connector.id in paused
        )
        reports.append(report)
    return reports


def _sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for an in-memory one)."""
    rest = url.split("://", 1)[1][1:] if "://" in url else ""
    rest = rest.split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest)


@dataclass(frozen=True, slots=True)
class StoredState:
    """What the database told about the tools, or why it told nothing."""

    tools: dict[str, StoredTool]
    read: bool  # the database was read
    failed: bool  # it exists (or is configured) but could not be read
    why: str  # where the switches come from, or why the database was not read

    @property
    def note(self) -> str:
        if self.read:
            return self.why
        return f"{self.why}: switches shown are the ones a new tool starts with"


async def stored_tools(settings: Settings) -> StoredState:
    """The per-tool settings stored by the chat, when a migrated database exists.

    Never creates or migrates a database: a SQLite file that does not exist is not opened."""
    url = settings.resolved_database_url
    if url.startswith("sqlite"):
        path = _sqlite_file(url)
        if path is None or not path.is_file():
            return StoredState({}, False, False, f"no database at {path or 'memory'}")
    from palui.db import Database, Store
    from palui.tools.watch import load_catalog_state

    db = Database(url)
    try:
        current, head = await db.revisions()
        if current != head:
            state = f"at revision {current}" if current else "not migrated"
            return StoredState({}, False, False, f"the {db.kind} database is {state}")
        stored = await load_catalog_state(Store(db))
        why = f"from the {db.kind} database (a tool it has not seen shows its starting switch)"
        return StoredState(stored, True, False, why)
    except PaluiError as exc:
        return StoredState({}, False, True, f"the database could not be read ({exc})")
    except Exception as exc:  # optional here: report it, don't crash the listing
        problem = f"{type(exc).__name__}: {exc}"
        return StoredState({}, False, True, f"the database could not be read ({problem})")
    finally:
        await db.close()


def _ordered(entries: list[CatalogEntry]) -> list[CatalogEntry]:
    """Unsure tools first, then by connector and name."""
    return sorted(entries, key=lambda e: (not e.classification.unsure, e.connector_id, e.name))


def _report_failures(survey_: Survey, err: TextIO) -> None:
    for report in survey_.failed:
        err.write(
            f"palui kinds: {report.id} did not connect ({report.problem}); its tools are missing.\n"
        )
    if survey_.database.failed:
        err.write(f"palui kinds: {survey_.database.note}\n")


# -- palui kinds list ------------------------------------------------------------------------


def entry_json(entry: CatalogEntry) -> dict[str, Any]:
    c = entry.classification
    return {
        "tool": entry.name,
        "connector": entry.connector_id,
        "class": str(c.tool_class),
        "sends_out": c.sends_out,
        "source": str(c.source),
        "reason": c.reason,
        "enabled": entry.enabled,
        "conflict": c.conflict,
    }


async def kinds_list(settings: Settings, out: TextIO, err: TextIO, *, as_json: bool = False) -> int:
    if not settings.mcp:
        err.write(_no_mcp_servers(settings))
    found = await survey(settings)
    entries = _ordered(found.entries)
    if as_json:
        for entry in entries:
            out.write(json.dumps(entry_json(entry), ensure_ascii=False) + "\n")
        _report_failures(found, err)
        return found.exit_code
    out.write(_list_text(found, entries))
    return found.exit_code


_HEADER = ("TOOL", "CLASS", "SENDS OUT", "SWITCH", "SOURCE", "REASON")


def _row(entry: CatalogEntry) -> tuple[str, ...]:
    c = entry.classification
    return (
        entry.name,
        str(c.tool_class),
        "yes" if c.sends_out else "no",
        "on" if entry.enabled else "off",
        str(c.source),
        c.reason,
    )


def _list_text(found: Survey, entries: list[CatalogEntry]) -> str:
    lines = [_kinds_line(found), f"Switches: {found.database.note}.", ""]
    groups: list[tuple[str, list[CatalogEntry]]] = []
    unsure = [e for e in entries if e.classification.unsure]
    if unsure:
        groups.append(
            (
                "Unsure: nothing tells what these do, so they count as destructive.\n"
                "Decide them in the kinds file (`palui kinds draft` writes one to start from).",
                unsure,
            )
        )
    for report in found.reports:
        if report.state is not ConnectorState.CONNECTED:
            continue
        sure = [e for e in entries if e.connector_id == report.id and not e.classification.unsure]
        count = len(report.entries)
        heading = f"{report.id} ({count} tool{'s' if count != 1 else ''}"
        heading += f"; {report.note}" if report.note else ""
        heading += f", {count - len(sure)} unsure above" if len(sure) != count else ""
        heading += "; paused in palui.toml: none offered)" if report.paused else ")"
        groups.append((heading, sure))
    rows = [_row(e) for e in entries]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(_HEADER[:-1])]

    def fmt(cells: tuple[str, ...]) -> str:
        head = "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=False))
        return f"  {head}  {cells[-1]}".rstrip()

    if rows:
        lines.append(fmt(_HEADER))
    for heading, group in groups:
        lines += ["", heading]
        if not group:
            lines.append("  (no tools)")
        for entry in group:
            lines.append(fmt(_row(entry)))
            if entry.classification.conflict:
                lines.append(f"      ! conflict: {entry.classification.conflict}")
            if entry.changed:
                lines.append("      ! its definition changed since it was classified")
    if found.failed:
        lines += ["", "Not connected (their tools are missing from this list):"]
        lines += [f"  {r.id}: {r.problem}" for r in found.failed]
    lines += ["", _summary(found, entries)]
    return "\n".join(lines) + "\n"


def _kinds_line(found: Survey) -> str:
    if found.kinds is None:
        return (
            f"Kinds file: none at {found.kinds_path} "
            "(classes come from annotations and inference; `palui kinds draft` writes one)."
        )
    infer_word = "on" if found.kinds.infer else "off"
    named = len(found.kinds.tools)
    return f"Kinds file: {found.kinds.path} ({named} tools named, inference {infer_word})."


def _summary(found: Survey, entries: list[CatalogEntry]) -> str:
    connected = sum(r.state is ConnectorState.CONNECTED for r in found.reports)
    unsure = sum(e.classification.unsure for e in entries)
    conflicts = sum(bool(e.classification.conflict) for e in entries)
    on = sum(e.enabled for e in entries)
    text = (
        f"{len(entries)} tools from {connected} connector{'s' if connected != 1 else ''}: "
        f"{on} on, {unsure} unsure, {conflicts} with a conflict."
    )
    if found.failed:
        text += f" {len(found.failed)} connector(s) did not connect: tools are missing."
    return text


# -- palui kinds explain ---------------------------------------------------------------------


async def kinds_explain(settings: Settings, name: str, out: TextIO, err: TextIO) -> int:
    configured = connector_ids(settings)
    parts = split_name(name)
    only = {parts[0]} if parts is not None and parts[0] in configured else None
    found = await survey(settings, only)
    entry = next((e for e in found.entries if e.name == name), None)
    if entry is None:
        err.write(_unknown_tool(name, found, configured))
        return 1
    out.write(explain_text(entry, found, settings))
    return 0


def _unknown_tool(name: str, found: Survey, configured: set[str]) -> str:
    lines = [f"palui kinds explain: no tool is called {name!r}."]
    names = sorted(e.name for e in found.entries)
    bare: dict[str, list[str]] = {}
    for full in names:
        parts = split_name(full)
        if parts is not None:
            bare.setdefault(parts[1], []).append(full)
    wanted = split_name(name)
    tail = wanted[1] if wanted else name
    close = [*bare.get(name, []), *bare.get(tail, [])]
    close += difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    for match in difflib.get_close_matches(tail, list(bare), n=5, cutoff=0.6):
        close += bare[match]
    close = list(dict.fromkeys(close))[:5]
    if close:
        lines.append("Did you mean: " + ", ".join(close) + "?")
    if wanted is None:
        lines.append("Name it in full as <connector>__<tool>, e.g. mcp-notes__add_note.")
    elif wanted[0] not in configured:
        known = ", ".join(sorted(configured)) or "none"
        lines.append(f"No connector {wanted[0]!r} is configured (configured: {known}).")
    for report in found.failed:
        lines.append(f"{report.id} did not connect ({report.problem}), so its tools are unknown.")
    lines.append("`palui kinds list` shows every tool.")
    return "\n".join(lines) + "\n"


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _hints(annotations: dict[str, Any] | None, keys: tuple[str, ...]) -> str:
    if not isinstance(annotations, dict):
        return ""
    found = [f"{key}: {json.dumps(annotations[key])}" for key in keys if key in annotations]
    return ", ".join(found)


def explain_text(entry: CatalogEntry, found: Survey, settings: Settings) -> str:
    c = entry.classification
    tool = entry.remote
    kinds = found.kinds
    kinds_entry = kinds.tools.get(entry.name) if kinds is not None else None
    stored = found.database.tools.get(entry.name)
    chat_class = stored.tool_class if stored is not None else None
    marks = read_marks(tool.annotations)
    inference = infer(tool)
    verdict = weigh(marks, inference)
    infer_on = kinds.infer if kinds is not None else True
    report = next((r for r in found.reports if r.id == entry.connector_id), None)
    paused = (
        " (paused in palui.toml: none of its tools is offered)" if report and report.paused else ""
    )
    if report is not None and report.note:
        paused = f" ({report.note})"

    # Which step gave the class, as `palui.policy.classify` decides it.
    if kinds_entry is not None:
        decided = 1
    elif chat_class is not None:
        decided = 2
    elif verdict is not None:
        decided = 3
    elif infer_on and inference.tool_class is not None:
        decided = 4
    else:
        decided = 5

    def mark(step: int) -> str:
        if step == decided:
            return "  <- decided here"
        if step == 4 and decided == 3:
            return "  (weighed against the marks in step 3)"
        return "  (not reached; shown for reference)" if step > decided else ""

    lines = [
        f"{entry.name}: {c.tool_class}{', sends out' if c.sends_out else ''} (source: {c.source})",
        f"  connector:       {entry.connector_id}{paused}",
        f"  description:     {' '.join((tool.description or '(none)').split())}",
        f"  reason:          {c.reason}",
    ]
    if c.conflict:
        lines.append(f"  conflict:        {c.conflict}")
    lines += [
        f"  sends out:       {_yes_no(c.sends_out)} ({_sends_out_why(kinds_entry, inference)})",
        f"  switch:          {'on' if entry.enabled else 'off'} "
        f"({_switch_why(entry, found, stored)})",
        f"  definition hash: sha256:{c.definition_hash}",
    ]
    if c.idempotent:
        lines.append("  idempotent:      yes (idempotentHint: an identical retry may skip a card)")
    lines += ["", "Where the class came from (the first step that gives one wins):"]

    # 1. the kinds file
    if kinds is None:
        step1 = f"no kinds file at {found.kinds_path}"
    elif kinds_entry is None:
        step1 = f"{kinds.path} does not name it"
    else:
        says = f"kind {kinds_entry.tool_class}"
        if kinds_entry.sends_out is not None:
            says += f", sends_out {str(kinds_entry.sends_out).lower()}"
        says += f", source {kinds_entry.source}"
        if kinds_entry.reason:
            says += f", reason {kinds_entry.reason!r}"
        step1 = f"{kinds.path} names it: {says}"
    lines.append(f"  1. Kinds file: {step1}.{mark(1)}")

    # 2. a class set in the chat (connector card)
    if not found.database.read:
        step2 = f"not known ({found.database.why})"
    elif chat_class is None:
        step2 = "no class set for it"
    else:
        step2 = f"set to {chat_class}"
    lines.append(f"  2. Class set in the chat: {step2}.{mark(2)}")

    # 3. the server's marks
    class_hints = _hints(tool.annotations, _CLASS_HINTS)
    other_hints = _hints(tool.annotations, _OTHER_HINTS)
    if marks.tool_class is None:
        said = "no annotations" if not tool.annotations else "annotations without a class hint"
        if other_hints:
            said += f" ({other_hints})"
        lines.append(f"  3. Server's marks: {said}: no mark.{mark(3)}")
    else:
        lines.append(
            f"  3. Server's marks: {class_hints or 'none'} -> {marks.tool_class} "
            f"({marks.reason}).{mark(3)}"
        )
        if other_hints:
            lines.append(f"     also: {other_hints}")
        if verdict is not None and verdict.marks_hold:
            lines.append("     Believed: inference sees nothing stricter.")
        elif verdict is not None:
            lines.append(
                f"     Not believed: inference sees {verdict.tool_class} ({verdict.reason}); "
                "the stricter class wins."
            )
            lines.append(f"     Conflict: {verdict.conflict}")

    # 4. inference
    off = "" if infer_on else " (inference is off in the kinds file: it sets no class alone)"
    seen = inference.tool_class or "nothing"
    lines.append(f"  4. Inference: {seen}{off}.{mark(4)}")
    for signal in inference.signals:
        lines.append(f"     - {signal.text} ({signal.effect})")
    if not inference.signals:
        lines.append("     - no verb tells what it does")
    for where in inference.destinations:
        lines.append(f"     - {where} (sends out)")

    # 5. fail closed
    lines.append(f"  5. Otherwise destructive (fail closed).{mark(5)}")
    if entry.changed:
        was = stored.definition_hash if stored is not None else None
        lines += [
            "",
            "Its definition changed after it was classified"
            + (f" (was sha256:{was})" if was else "")
            + ": until someone looks at it again it counts as destructive (unsure).",
        ]
    lines += ["", f"Result: {c.explain()}"]
    if c.unsure or c.conflict:
        lines.append(
            f"To decide it yourself, name it in {found.kinds_path} "
            f"(`palui kinds draft` writes a file to start from)."
        )
    return "\n".join(lines) + "\n"


def _sends_out_why(kinds_entry: KindEntry | None, inference: Inference) -> str:
    if kinds_entry is not None and kinds_entry.sends_out is not None:
        return "the kinds file says so"
    reasons = list(inference.destinations)
    reasons += [s.text for s in inference.signals if str(s.effect) == "send"]
    if reasons:
        return "; ".join(reasons)
    return "no destination argument and no sending verb"


def _switch_why(entry: CatalogEntry, found: Survey, stored: StoredTool | None) -> str:
    _, _, tool = entry.name.partition("__")
    globs = found.globs.get(entry.connector_id, Globs())
    slug = entry.connector_id.removeprefix("mcp-")
    is_read = entry.classification.tool_class is ToolClass.READ
    changed_off = entry.changed and not is_read
    disabled = next((g for g in globs.disable if _matches(tool, g)), None)
    enabled = next((g for g in globs.enable if _matches(tool, g)), None)
    if disabled is not None:
        return f"palui.toml [mcp.{slug}] disable = {disabled!r} names it"
    if enabled is not None:
        why = f"palui.toml [mcp.{slug}] enable = {enabled!r} names it"
        return why + ("; but off: its definition changed" if changed_off else "")
    if stored is None:
        if is_read:
            first = "on because it is read"
        elif not entry.enabled:
            first = "off: a new tool starts off unless read"
        elif entry.connector_id == BUILTIN_ID:
            first = "on: Palui's own tools start on; the policy decides when they ask"
        else:
            first = "on: recall's save and forget start on; forget always asks first"
        return f"not set in the chat; {first}"
    why = "set in the chat"
    return why + ("; but off: its definition changed" if changed_off else "")


def _matches(tool: str, glob: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(tool, glob)


# -- palui kinds draft -----------------------------------------------------------------------


async def kinds_draft(
    settings: Settings, output: Path | None, force: bool, out: TextIO, err: TextIO
) -> int:
    path = output if output is not None else DEFAULT_DRAFT_PATH
    live = settings.kinds_file
    is_live = _same_file(path, live)
    if path.is_dir():
        err.write(f"palui kinds draft: {path} is a directory; name a file with --output.\n")
        return 1
    if path.exists() and not force:
        what = "the live kinds file" if is_live else "a file"
        err.write(
            f"palui kinds draft: {path} is {what} that already exists; not overwriting it.\n"
            "Use --output to write elsewhere, or --force to replace it.\n"
        )
        return 1
    if not settings.mcp:
        err.write(_no_mcp_servers(settings))
    found = await survey(settings)
    _report_failures(found, err)
    entries = found.entries
    if not any(r.state is ConnectorState.CONNECTED for r in found.reports):
        err.write("palui kinds draft: no connector connected, so there is nothing to draft.\n")
        return 1
    classifications = {e.name: e.classification for e in entries}
    infer_on = found.kinds.infer if found.kinds is not None else True
    text = draft_kinds_file(classifications, infer=infer_on)
    parse_kinds_file(text, str(path))  # a draft Palui could not read would help no one
    _write(path, text)
    unsure = sum(c.unsure for c in classifications.values())
    conflicts = sum(bool(c.conflict) for c in classifications.values())
    out.write(
        f"Wrote {path}: {len(classifications)} tools, {unsure} unsure (listed first: decide "
        f"those), {conflicts} with a conflict.\n"
    )
    if is_live:
        out.write(f"Note: {path} is the live kinds file; Palui uses it from its next start.\n")
    else:
        out.write(
            "Review it, change what is wrong, then adopt it:\n"
            f"  mv {path} {live}\n"
            f"(or point PALUI_KINDS_FILE at it). Palui reads {live} at its next start.\n"
        )
        if live.exists():
            out.write(f"{live} exists already: compare before replacing it.\n")
    missing = []
    if found.kinds is not None:
        missing = sorted(name for name in found.kinds.tools if name not in classifications)
    if missing:
        err.write(
            f"palui kinds draft: {len(missing)} tool(s) named in the live kinds file were not "
            f"seen now and are not in the draft: {', '.join(missing)}.\n"
        )
    return found.exit_code


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.resolve() == second.resolve()
    except OSError:
        return False


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


__all__ = [
    "ConnectorReport",
    "Survey",
    "add_kinds_parser",
    "connector_ids",
    "entry_json",
    "explain_text",
    "kinds_draft",
    "kinds_explain",
    "kinds_list",
    "run_kinds",
    "stored_tools",
    "survey",
]
