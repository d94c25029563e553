"""`Palui`, the composition root's whole: builds every part from Settings, hands each its
collaborators, and owns the start/stop order. Nothing below it builds a part or rewires one.

async with Palui(settings) as app:      # database migrated, tool settings loaded
    await app.serve_telegram(stop)      # connectors up, Telegram polled, until `stop` is set

Seams for tests: `Palui(settings, channel=..., model=..., clock=..., toolsets=...)` — a given
channel replaces Telegram (see tests/fakes/memory_channel.py), a given model replaces litellm's,
a given clock replaces `datetime.now`, and given toolsets (`palui.ports.Toolset`, e.g. Python
functions) sit in the tool registry beside the configured connectors and the built-ins, treated as
connectors are: classified by the catalog, switched, watched at start and offered to turns.
`send_limits` paces the Telegram channel's sends instead of Telegram's limits (tests, the
benchmark), and `mcp_transport` is how the connectors reach their servers (tests serve some in
their own process: tests/fakes/in_process_mcp.py). `intake` is what `palui run` started before
importing this module (`palui.app.start`): the bot, polled into the early inbox.

The package is the root, by concept: the shared parts are built here; `assembly` builds the
parts that talk to a chat for one channel, `serving` what `palui run` serves besides (Telegram,
the HTTP server), `console` the terminal's loop; `parts`, `leasing`, `remote` and `warmup` the
pieces they are made of.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TextIO

from palui.app.assembly import Running, assemble
from palui.app.console import CONSOLE_CHAT_ID, CONSOLE_USER, converse
from palui.app.observing import app_metrics
from palui.app.parts import (
    build_catalog,
    build_connectors,
    build_model,
    load_kinds,
    retention_days,
    utc_now,
    web_base,
)
from palui.app.remote import build_remote, close_remote
from palui.app.serving import http_server
from palui.app.start import Intake, take_in
from palui.app.warmup import WarmUp
from palui.channels.console import ConsoleChannel
from palui.channels.ratelimit import SendLimits
from palui.channels.telegram import TelegramChannel
from palui.chat.chats import Chats
from palui.chat.early_inbox import EarlyInbox
from palui.chat.sweepers import sweep_retention
from palui.config import Settings
from palui.connectors.transport import OpenTransport, open_transport
from palui.connectors.warm import prepare_result_checks
from palui.db import Database, Store
from palui.domain import ChatScope
from palui.http import HttpServer
from palui.jobs.scheduler import JobScheduler
from palui.llm import ModelClient
from palui.logs import get_logger
from palui.observe import Tracing
from palui.observe.process import StartUp
from palui.ports import Channel, ChatModel, Toolset
from palui.sandbox import RunCode
from palui.skills import SkillLibrary, SkillTools
from palui.tools.builtins import BuiltinTools
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules
from palui.tools.switchboard import Switchboard
from palui.tools.watch import ToolWatch, load_catalog_state
from palui.webhooks.specs import load_webhooks

log = get_logger("palui.app")


class Palui:
    def __init__(
        self,
        settings: Settings,
        *,
        channel: Channel | None = None,
        model: ChatModel | None = None,
        clock: Callable[[], datetime] | None = None,
        toolsets: Sequence[Toolset] = (),
        store: Store | None = None,
        send_limits: SendLimits | None = None,
        mcp_transport: OpenTransport = open_transport,
        intake: Intake | None = None,
    ) -> None:
        self.settings = settings
        self._intake = intake  # None: `serve_telegram` takes in itself
        self._channel = channel  # None: Telegram, built when served
        self._send_limits = send_limits  # None: Telegram's
        self.now = clock or utc_now
        self.store = store or Store(Database(settings.resolved_database_url))  # or a test's own
        self.db = self.store.db
        self.model = model or build_model(settings)
        self.skills = SkillLibrary(settings.resolved_skills_dir, self.store)
        self.kinds = load_kinds(settings)
        self.remote = build_remote(settings, self.db, self.base_url)  # OAuth sign-ins
        self.connectors = build_connectors(
            settings, self._tools_changed, self.remote, transport=mcp_transport
        )
        self.builtins = BuiltinTools(
            self.store,
            allowed_users=settings.allowed_users,
            timezone=settings.timezone,
            min_interval_s=settings.min_job_interval_s,
            job_token_cap=settings.job_daily_token_cap,
            now=self.now,
            run_code=RunCode(settings.run_code, settings.data_dir)
            if settings.run_code.enabled
            else None,
            skills=SkillTools(self.skills),
        )
        self.registry = ToolRegistry([*self.connectors.connectors(), *toolsets, self.builtins])
        # GET /metrics; each part counts its own (the Telegram adapter from the first poll)
        self.metrics = app_metrics(self.registry, intake.metrics if intake else None)
        self.tracing = Tracing.to(settings.otel_endpoint)  # off (nothing built) when unset
        self.catalog = build_catalog(settings, self.kinds, {}, self.registry)
        self.tool_rules = ToolRules.from_settings(settings)  # imports the hooks: fails early
        self._watch: ToolWatch | None = None
        # First-use costs paid in the background as the app starts (the model's import and its
        # rehearsal first): Telegram is polled meanwhile, what comes is stored, and a turn waits
        # for the model layer to be ready (`palui.llm`), so the first answer costs no more.
        self.warm_up = WarmUp()
        self.start_up = intake.start_up if intake else StartUp()  # /healthz, `palui doctor`
        self.jobs: JobScheduler | None = None  # running while a channel is served
        self.http: HttpServer | None = None  # serving while `serve_telegram` runs
        self.chats: Chats | None = None  # likewise (or `chat_console`)
        self.switchboard: Switchboard | None = None  # likewise; tests count its reloads
        self.serving = asyncio.Event()  # set once `serve_telegram` serves: what comes is answered

    async def __aenter__(self) -> Palui:
        if isinstance(self.model, ModelClient):  # a model given by a test needs no import
            self.warm_up.start("model", self.model.warm_up)
        self.warm_up.start("mcp-results", prepare_result_checks)
        await self.db.migrate()
        await self.builtins.probe()
        stored = await load_catalog_state(self.store)
        self.catalog = build_catalog(self.settings, self.kinds, stored, self.registry)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.warm_up.cancel()
        await self.connectors.stop()
        if isinstance(self.model, ModelClient):
            await self.model.aclose()  # its HTTP session
        await close_remote(self.remote)
        await self.db.close()
        await asyncio.to_thread(self.tracing.shutdown)  # the spans still buffered go out

    async def _tools_changed(self, connector_id: str) -> None:
        toolset = self.connectors.get(connector_id)
        if self._watch is not None and toolset is not None:
            await self._watch.sync([toolset])

    def base_url(self) -> str:
        """Where people reach this process's HTTP server (sign-in links, OAuth callbacks)."""
        return web_base(self.settings, self.http.url if self.http is not None else None)

    async def _start(self, running: Running, early: EarlyInbox | None = None) -> None:
        """Connectors and the tool watch, then the chats (handed what `early` stored), then the
        jobs (a due run is queued into its chat's worker)."""
        await self.connectors.start()
        self._watch = ToolWatch(self.store, self.catalog, running.chats.notify_owners)
        await self.skills.start(running.chats.notify_owners)  # a changed skill: told once
        await self._watch.sync(self.registry.toolsets, at_start=True)
        self.switchboard = running.board
        await running.board.sync()  # the switches as stored, after the watch wrote its own
        for part, warm in running.warm_ups:  # beside the chats' start, not before it
            self.warm_up.start(part, warm)
        self.chats = running.chats
        if early is None:
            await running.chats.start()
        else:  # what the early inbox stored is taken up, what comes next goes to the chats
            await early.open(running.chats.inbox, running.chats.start)
        if running.prunes:
            days, store, now = retention_days(self.settings), self.store, self.now
            running.background.spawn(sweep_retention(store, days, now))
        self.jobs = running.scheduler
        await running.scheduler.start()

    async def serve_telegram(self, stop: asyncio.Event) -> None:
        """Serve Telegram (polling, or webhook mode when PALUI_TELEGRAM_WEBHOOK_URL is set) and
        the HTTP server (webhooks, health) until `stop` is set. A channel given to the
        constructor is served instead of Telegram (it gets its inbounds from the test)."""
        telegram: TelegramChannel | None = None
        intake = self._intake
        if self._channel is None:
            self.settings.require("telegram_token", "allowed_users")
        else:
            self.settings.require("allowed_users")
        webhooks = load_webhooks(self.settings)  # before anything starts: secrets are checked
        if self._channel is None:
            if intake is None:  # not taken in by `palui run` before this module was imported
                intake = await take_in(
                    self.settings, self.store, self.metrics, self.start_up, self._send_limits
                )
            telegram = intake.telegram
            channel: Channel = telegram
        else:
            channel = self._channel
        try:
            running = assemble(self, channel, self.settings.allowed_users)
        except BaseException:
            if telegram is not None:
                await telegram.close()
            raise
        chats = running.chats
        if telegram is not None:
            telegram.on_back(running.channel_back)  # after an outage, replies go out at once
        try:
            await self._start(running, intake.inbox if intake is not None else None)
            self.http = http_server(self, running, telegram, webhooks)
            await self.http.start()
            await self.warm_up.ready()  # serving, warm: what `ready_in_s` says
            s = self.settings
            if telegram is not None and s.telegram_webhook_url and s.telegram_webhook_secret:
                secret = s.telegram_webhook_secret.get_secret_value()
                await telegram.start_webhook(s.telegram_webhook_url, secret, running.menu)
            elif telegram is not None:
                await telegram.set_menu(running.menu)  # the menu appears as Palui serves
            self.serving.set()
            self.start_up.ready()
            way = self.model.way() if isinstance(self.model, ModelClient) else None
            log.info("palui_running", database=self.db.kind, model=self.model.name, over=way)
            await stop.wait()
        finally:
            log.info("palui_stopping")
            self.start_up.stopped()
            if self.http is not None:
                await self.http.stop()
            if self.jobs is not None:
                await self.jobs.stop()
            if telegram is not None:
                await telegram.close()
            await chats.close()
            await self.connectors.stop()

    async def chat_console(
        self, read_line: Callable[[str], str], out: TextIO | None = None
    ) -> None:
        """The same engine in a terminal: one line in, the reply out (to stdout unless `out`),
        until EOF or /quit. Approval cards become y/n questions. It serves the console chat
        alone: on the daemon's database, Telegram chats' replies, messages, jobs and webhooks
        wait for the daemon."""
        out = out or sys.stdout  # looked up now, not at import: a redirected stdout is used
        channel = ConsoleChannel(out, CONSOLE_CHAT_ID)
        only = ChatScope(only=CONSOLE_CHAT_ID)
        running = assemble(self, channel, frozenset({CONSOLE_USER.id}), only)
        await self._start(running)
        try:
            await converse(running.chats, channel, read_line, out)
        finally:
            await running.scheduler.stop()
            await running.chats.close()
