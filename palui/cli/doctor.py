"""`palui doctor`: check each part of the set-up, say what is wrong and how to fix it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from palui.cli import doctor_voice
from palui.cli.doctor_check import Check
from palui.config import Settings, load_settings
from palui.domain import RemoteTool
from palui.errors import ConfigError, PaluiError
from palui.logs import configure_logging

FAR_PAST = 3  # enabled tools past this many times max_tools: choosing has little to go on


def _required(settings: Settings) -> list[Check]:
    checks = []
    for name in ("telegram_token", "allowed_users", "model"):
        try:
            settings.require(name)
        except ConfigError as exc:
            checks.append(Check(f"PALUI_{name.upper()}", False, str(exc)))
    if not checks:
        users = ", ".join(str(u) for u in sorted(settings.allowed_users))
        checks.append(Check("settings", True, f"token, model and allowed users ({users}) are set"))
    return checks


async def _database(settings: Settings) -> Check:
    from palui.db import Database

    db = Database(settings.resolved_database_url)
    try:
        current, head = await db.revisions()
    except PaluiError as exc:
        return Check("database", False, str(exc), "Check PALUI_DATABASE_URL and that it runs.")
    finally:
        await db.close()
    if current != head:
        return Check(
            "database",
            False,
            f"{db.kind} schema is at {current or 'nothing'}, Palui needs {head}",
            "Run `palui migrate` (`palui run` also migrates on start).",
        )
    return Check("database", True, f"{db.kind} reachable, schema up to date ({head})")


def _file_modes(settings: Settings) -> Check:
    """The data dir 0700 and the database files 0600: nobody else reads the conversations."""
    from palui.db.files import loose_files, sqlite_path

    databases = [path for path in (sqlite_path(settings.resolved_database_url),) if path]
    if settings.recall.enabled and not (settings.recall.url or settings.recall.command):
        databases.append(settings.data_dir / "recall.db")  # the bundled recall's file
    fixes = loose_files(settings.data_dir, databases)
    if fixes:
        return Check(
            "files",
            False,
            "the data dir or a database file can be read by other users",
            " && ".join(fixes),
        )
    return Check("files", True, "data dir 0700, database files 0600")


async def _model(settings: Settings) -> Check:
    from palui.app.parts import build_model

    model = build_model(settings)
    try:
        answered = await model.probe()
    except PaluiError as exc:
        return Check(
            "model",
            False,
            str(exc),
            "Check PALUI_MODEL, PALUI_MODEL_API_BASE and PALUI_MODEL_API_KEY.",
        )
    finally:
        await model.aclose()
    stood_in = answered.stood_in
    if stood_in is not None:
        # Turns still get answers, from the fallback: the primary is what needs fixing.
        return Check(
            "model",
            False,
            f"{stood_in.primary} refused ({stood_in.reason}); {stood_in.model} stands in for it",
            "Set PALUI_MODEL to a model the API key may use, or change what its plan allows.",
        )
    return Check("model", True, f"{answered.model} answered (over {model.way(answered.model)})")


async def _telegram(settings: Settings) -> Check:
    from palui.channels.telegram import TelegramChannel

    assert settings.telegram_token is not None
    channel = TelegramChannel(settings.telegram_token.get_secret_value(), settings.telegram_api_url)
    try:
        await channel.initialize()
        name = channel.bot.username
    except PaluiError as exc:
        return Check("telegram", False, str(exc), "Check PALUI_TELEGRAM_API_URL and the network.")
    finally:
        await channel.close()
    return Check("telegram", True, f"logged in as @{name}")


def _http(settings: Settings) -> Check:
    from palui.webhooks.specs import load_webhooks

    try:
        webhooks = load_webhooks(settings)
    except ConfigError as exc:
        return Check("http", False, str(exc))
    mode = "Telegram webhook mode" if settings.telegram_webhook_url else "Telegram polling"
    return Check(
        "http",
        True,
        f"{settings.http_host}:{settings.http_port}, {len(webhooks)} webhook(s), {mode}",
    )


async def _running(settings: Settings) -> Check | None:
    """What a `palui run` answering on the HTTP port says of itself: a degraded one (its
    database unreachable) explained; none answering is no problem of the configuration."""
    import aiohttp

    host = "127.0.0.1" if settings.http_host in ("0.0.0.0", "::", "") else settings.http_host
    url = f"http://{host}:{settings.http_port}/healthz"
    try:
        timeout = aiohttp.ClientTimeout(total=3)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as reply:
            health = await reply.json()
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
    if not isinstance(health, dict) or "status" not in health:
        return None
    if health["status"] != "degraded":
        detail = f"palui run answers on {url}: {health['status']}{_costs(health)}"
        return Check("running", True, detail)
    return Check(
        "running",
        False,
        f"palui run on {url} is degraded: it can't reach its database",
        "Messages wait meanwhile (Telegram keeps them until they are stored; replies stay in "
        "the outbox) and are answered once the database is back. Start the database or fix "
        "the network to it; the database line above says what this machine sees.",
    )


def _costs(health: dict[str, object]) -> str:
    """What the running process costs its host, as its /healthz says (older ones don't)."""
    process = health.get("process")
    if not isinstance(process, dict):
        return ""
    parts = []
    if isinstance(rss := process.get("rss_mb"), int | float):
        parts.append(f"{rss:.0f} MB resident (peak {process.get('peak_rss_mb', 0):.0f} MB)")
    if isinstance(polling := process.get("polling_in_s"), int | float):
        parts.append(f"polling Telegram {polling:.1f} s after its start")
    if isinstance(ready := process.get("ready_in_s"), int | float):
        parts.append(f"serving {ready:.1f} s after its start")
    return "; " + ", ".join(parts) if parts else ""


Listed = list[tuple[str, RemoteTool]]  # the tools of the connected connectors


async def _connectors(settings: Settings) -> tuple[list[Check], Listed]:
    from palui.app.parts import web_base
    from palui.app.remote import build_remote
    from palui.connectors import ConnectorManager
    from palui.connectors.recall import recall_server_settings
    from palui.db import Database
    from palui.domain import RECALL_ID, ConnectorState

    recall = recall_server_settings(settings)
    if not settings.mcp and recall is None:
        return [], []
    checks = []
    db = Database(settings.resolved_database_url)  # where signed-in connectors' grants are
    remote = build_remote(settings, db, lambda: web_base(settings, None))
    oauth = remote.setup if remote is not None else None
    try:
        async with ConnectorManager(settings.mcp, recall=recall, oauth=oauth) as manager:
            statuses = manager.statuses()
            listed = [
                (connector.id, tool)
                for connector in manager.connectors()
                if connector.status().state == ConnectorState.CONNECTED
                for tool in connector.tools()
            ]
    finally:
        await db.close()
    for status in statuses:
        if status.state == ConnectorState.CONNECTED:
            checks.append(Check(status.id, True, f"connected, {status.tool_count} tools"))
        elif status.state == ConnectorState.PAUSED:
            checks.append(Check(status.id, True, "paused in palui.toml"))
        elif status.state == ConnectorState.NEEDS_SIGN_IN:
            slug = status.id.removeprefix("mcp-")
            fix = f"Send /connect {slug} to Palui in your private chat, and follow the link."
            checks.append(Check(status.id, False, "needs sign-in", fix))
        elif status.id == RECALL_ID:
            where = "the url in [recall]" if settings.recall.url else "[recall] in palui.toml"
            checks.append(
                Check(
                    status.id,
                    False,
                    f"memory not connected: {status.error or status.state}",
                    f"Check {where}, or set `enabled = false` under [recall] to run without "
                    "long-term memory.",
                )
            )
        else:
            slug = status.id.removeprefix("mcp-")
            checks.append(
                Check(
                    status.id,
                    False,
                    f"not connected: {status.error or status.state}",
                    f"Check [mcp.{slug}] in palui.toml (command, args, url) and that the "
                    "server runs on its own.",
                )
            )
    return checks, listed


async def _tool_budget(settings: Settings, listed: Listed) -> Check | None:
    """How many tools are switched on against `max_tools`: past it, each turn is offered the
    most relevant; far past it, the person may want to switch some off."""
    from palui.app.parts import build_catalog, load_kinds
    from palui.cli.kinds.survey import stored_tools
    from palui.tools.builtins import CONNECTOR_ID, TOOLS

    try:
        catalog = build_catalog(
            settings, load_kinds(settings), (await stored_tools(settings)).tools
        )
    except PaluiError:
        return None  # the kinds file or the database: their own checks say what is wrong
    tools = [*listed, *((CONNECTOR_ID, tool) for tool in TOOLS)]
    enabled = sum(catalog.entry(cid, tool).enabled for cid, tool in tools)
    budget = settings.max_tools
    if enabled <= budget:
        return Check("tools", True, f"{enabled} enabled, all offered to each turn ({budget} max)")
    detail = (
        f"{enabled} enabled, more than the {budget} a turn is offered: each turn gets the most "
        "relevant and the model can search for the rest (palui__find_tools)"
    )
    if enabled <= budget * FAR_PAST:
        return Check("tools", True, detail)
    return Check(
        "tools",
        False,
        detail,
        "Far past the budget, the right tool is found less often. Switch off tools you don't "
        "use (/connectors, or `disable` globs in palui.toml), or raise max_tools.",
        warning=True,
    )


async def _run_code(settings: Settings) -> Check | None:
    """palui__run_code's sandbox, when it is switched on: the same probe as at start, and the
    limits in force (a cgroup's, or rlimits')."""
    from palui.sandbox import RunCode

    if not settings.run_code.enabled:
        return None
    run_code = RunCode(settings.run_code, settings.data_dir)
    reason = await run_code.probe()
    if reason is None:
        limits = run_code.confinement.describe(run_code.limits)
        return Check(
            "run_code",
            True,
            f"the bubblewrap sandbox works; palui__run_code is offered. Limits: {limits}",
        )
    return Check(
        "run_code",
        False,
        f"palui__run_code is not offered: {reason}",
        "Install bubblewrap (`apt-get install bubblewrap`) or point `bwrap` under [run_code] at "
        "it; it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; "
        "in a container, a seccomp profile that allows them). Or set `enabled = false`.",
    )


async def run_doctor(config_path: Path | None, out: TextIO = sys.stdout) -> int:
    """Print one line per check; return 0 when everything is fine, else 1 (2: config unreadable)."""
    try:
        settings = load_settings(config_path)
    except ConfigError as exc:
        out.write(f"❌ config: {exc}\n")
        return 2
    # The connectors it starts log too (their servers' stderr included): redacted, to stderr,
    # and only what is worse than info, so the checks stay readable.
    configure_logging(settings.log_format, "warning", settings.secrets())
    where = settings.config or "no palui.toml (environment only)"
    checks = [Check("config", True, f"read from {where}")]
    checks += _required(settings)
    checks.append(_http(settings))
    checks.append(_file_modes(settings))
    checks.append(await _database(settings))
    if (running := await _running(settings)) is not None:
        checks.append(running)
    if settings.model:
        checks.append(await _model(settings))
    for voice_check in (doctor_voice.transcription, doctor_voice.speech):
        if (voiced := await voice_check(settings)) is not None:
            checks.append(voiced)
    if settings.telegram_token:
        checks.append(await _telegram(settings))
    connected, listed = await _connectors(settings)
    checks += connected
    if (budget := await _tool_budget(settings, listed)) is not None:
        checks.append(budget)
    if (run_code := await _run_code(settings)) is not None:
        checks.append(run_code)
    for check in checks:
        mark = "✅" if check.ok else ("⚠️" if check.warning else "❌")
        out.write(f"{mark} {check.name}: {check.detail}\n")
        if check.fix:
            out.write(f"   fix: {check.fix}\n")
    problems = sum(not c.ok and not c.warning for c in checks)
    out.write("All good.\n" if not problems else f"{problems} problem(s) found.\n")
    return 1 if problems else 0
