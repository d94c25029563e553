"""What `palui kinds` looks at: every configured connector's tools, classified as the daemon
classifies them, and the switches stored by the chat when a migrated database exists.

The connectors are built and the tools classified by `palui.app`'s own builders, so what these
commands show is what a running Palui would do. The bundled recall server runs on an in-memory
file, so its real file is neither created nor upgraded; the database is only read, never created
or migrated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from palui.config import Settings
from palui.domain import RECALL_ID, ConnectorState
from palui.errors import PaluiError
from palui.policy.kinds_file import KindsFile
from palui.sandbox import RunCode
from palui.tools.builtins import CONNECTOR_ID as BUILTIN_ID
from palui.tools.builtins import TOOLS as BUILTIN_TOOLS
from palui.tools.catalog import CatalogEntry, Globs, StoredTool, ToolCatalog

if TYPE_CHECKING:
    from palui.connectors import ConnectorManager

RECALL_LOOK_DB = ":memory:"  # the bundled recall server's file while `palui kinds` looks
_CONNECTOR_NOTES = {BUILTIN_ID: "built in", RECALL_ID: "long-term memory"}


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
    # palui.app brings the whole daemon (Telegram, aiohttp, the chat engine) with it: imported
    # when a kinds command runs, so the other commands start without it.
    from palui.app.parts import build_catalog, build_connectors, load_kinds, switch_globs

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
        if kinds is not None:  # a bare name two connectors have is a config error
            kinds.check_bare({c.id: {t.name for t in c.tools()} for c in manager.connectors()})
        reports = _reports(manager, catalog, paused)
    finally:
        await manager.stop()
    if wanted(BUILTIN_ID):  # always there, nothing to connect to
        builtins = list(BUILTIN_TOOLS)
        if settings.run_code.enabled:  # listed when switched on, whether or not bwrap works
            builtins.append(RunCode(settings.run_code, settings.data_dir).tool)
        entries = [catalog.entry(BUILTIN_ID, tool) for tool in builtins]
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
    # Only once a database is known to exist: a listing without one never loads SQLAlchemy.
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
