"""The composition root, the only one: builds every part from Settings, hands each its
collaborators, and owns the start/stop order. Nothing below it builds a part or rewires one.

async with Palui(settings) as app:      # database migrated, tool settings loaded
    await app.serve_telegram(stop)      # connectors up, Telegram polled, until `stop` is set

Seams for tests: `Palui(settings, channel=..., model=..., clock=..., toolsets=...)` — a given
channel replaces Telegram (see tests/fakes/memory_channel.py), a given model replaces litellm's,
a given clock replaces `datetime.now`, and given toolsets (`palui.ports.Toolset`, e.g. Python
functions) sit in the tool registry beside the configured connectors and the built-ins, treated as
connectors are: classified by the catalog, switched, watched at start and offered to turns.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TextIO

from palui.app.leasing import leasing
from palui.app.observing import app_metrics, secret
from palui.app.parts import (
    build_catalog,
    build_connectors,
    build_model,
    hidden,
    limits,
    load_kinds,
    media_intake,
    memory_config,
    retention_days,
    utc_now,
    web_base,
)
from palui.app.remote import build_remote, close_remote, oauth_routes, remote_commands
from palui.app.running import Running
from palui.app.warmup import WarmUp, first_turn
from palui.approvals.decisions import Approvals
from palui.approvals.edits import EditFlow
from palui.callbacks import ConnectorButton, JobButton, SkillButton
from palui.channels.console import ConsoleChannel
from palui.channels.telegram import TelegramChannel
from palui.chat.background import Background
from palui.chat.chats import Chats
from palui.chat.inbox import Inbox
from palui.chat.outbox import Outbox
from palui.chat.pauses import CapPauses
from palui.chat.sweepers import sweep_retention
from palui.chat.wakeups import Wakeups
from palui.chat.workers import ChatWorkers
from palui.config import Settings
from palui.connectors.warm import prepare_result_checks
from palui.db import Database, Store
from palui.domain import EVERY_CHAT, ChatScope, ChatUser, Inbound
from palui.http import FailureThrottle, HttpServer, TelegramWebhook
from palui.interact.commands import Commands
from palui.interact.connector_sheet import ConnectorSheet
from palui.interact.job_sheet import JobSheet
from palui.interact.paused import PausedConnectors
from palui.interact.router import Router
from palui.interact.skill_sheet import SkillSheet
from palui.interact.status import Status, StatusInfo
from palui.interact.taps import ApprovalTaps, EditTaps, SheetTaps
from palui.interact.web_link import WebLinks
from palui.jobs.scheduler import JobScheduler
from palui.llm import LiteLLMModel
from palui.logs import get_logger
from palui.memory import Memory
from palui.observe import Tracing
from palui.observe.process import StartUp
from palui.ports import Channel, ChatModel, Toolset
from palui.sandbox import RunCode
from palui.skills import SkillLibrary, SkillTools
from palui.tools.builtins import BuiltinTools
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules
from palui.tools.switchboard import Switchboard, catalog_reload
from palui.tools.watch import ToolWatch, load_catalog_state
from palui.turns.runner import TurnRunner
from palui.web.console import console_app
from palui.web.deps import WebDeps
from palui.webhooks.specs import WebhookSpec, load_webhooks

log = get_logger("palui.app")

CONSOLE_CHAT_ID = 0  # never a Telegram chat id
CONSOLE_USER = ChatUser(id=0, username="console")


class Palui:
    def __init__(
        self,
        settings: Settings,
        *,
        channel: Channel | None = None,
        model: ChatModel | None = None,
        clock: Callable[[], datetime] | None = None,
        toolsets: Sequence[Toolset] = (),
    ) -> None:
        self.settings = settings
        self._channel = channel  # None: Telegram, built when served
        self._now = clock or utc_now
        self.db = Database(settings.resolved_database_url)
        self.store = Store(self.db)
        self.model = model or build_model(settings)
        self.skills = SkillLibrary(settings.resolved_skills_dir, self.store)
        self.kinds = load_kinds(settings)
        self.remote = build_remote(settings, self.db, self._web_base)  # OAuth sign-ins
        self.connectors = build_connectors(settings, self._tools_changed, self.remote)
        self.builtins = BuiltinTools(
            self.store, allowed_users=settings.allowed_users, timezone=settings.timezone,
            min_interval_s=settings.min_job_interval_s, job_token_cap=settings.job_daily_token_cap,
            now=self._now, run_code=RunCode(settings.run_code, settings.data_dir)
            if settings.run_code.enabled else None, skills=SkillTools(self.skills),
        )  # fmt: skip
        self.registry = ToolRegistry([*self.connectors.connectors(), *toolsets, self.builtins])
        self.metrics = app_metrics(self.registry)  # GET /metrics; each part counts its own
        self.tracing = Tracing.to(settings.otel_endpoint)  # off (nothing built) when unset
        self.catalog = build_catalog(settings, self.kinds, {}, self.registry)
        self.tool_rules = ToolRules.from_settings(settings)  # imports the hooks: fails early
        self._watch: ToolWatch | None = None
        # First-use costs paid in the background as the app starts (the model's import and its
        # rehearsal first); Telegram is polled once they're done: the first answer costs no more.
        self.warm_up, self.start_up = WarmUp(), StartUp()  # start_up: /healthz, `palui doctor`
        self.jobs: JobScheduler | None = None  # running while a channel is served
        self.http: HttpServer | None = None  # serving while `serve_telegram` runs
        self.chats: Chats | None = None  # likewise (or `chat_console`)
        self.switchboard: Switchboard | None = None  # likewise; tests count its reloads

    async def __aenter__(self) -> Palui:
        if isinstance(self.model, LiteLLMModel):  # a model given by a test needs no import
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
        await close_remote(self.remote)
        await self.db.close()
        await asyncio.to_thread(self.tracing.shutdown)  # the spans still buffered go out

    async def _tools_changed(self, connector_id: str) -> None:
        toolset = self.connectors.get(connector_id)
        if self._watch is not None and toolset is not None:
            await self._watch.sync([toolset])

    def _assemble(
        self, channel: Channel, allowed_users: frozenset[int], scope: ChatScope = EVERY_CHAT
    ) -> Running:
        """Every part that talks to a chat, built in dependency order for one channel; the
        senders, workers, recovery and jobs only for the chats of `scope`."""
        s, store, now, registry = self.settings, self.store, self._now, self.registry
        m, t = self.metrics, self.tracing
        turn_limits = limits(s, self.tool_rules)
        approvals = Approvals(
            store, channel, ttl_s=s.approval_ttl_s, now=now, approver=s.groups.approver,
            metrics=m,
        )  # fmt: skip
        edits = EditFlow(store, channel, approvals, registry, self.tool_rules, now=now)
        paused = PausedConnectors(store.tool_settings)
        memory = Memory(store, self.model, registry, memory_config(s), is_paused=paused.is_paused)
        # The database is the truth for every switch: each process reloads its cached ones when
        # the settings version moved (a tap in another process), before a turn's offer.
        board = Switchboard(
            store.tool_settings.version,
            [catalog_reload(store, self.catalog), paused.load, memory.refresh, self.skills.reload],
        )
        memory.follow(board)  # its switches are the board's: no read of their own per turn
        background = Background()
        leases, senders, recovery = leasing(store, s.lease_ttl_s, scope, m)
        outbox = Outbox(store, channel, senders, background, scope=scope, chat_leases=leases,
                        metrics=m, tracing=t)  # fmt: skip
        turns = TurnRunner(
            store, self.model, channel, registry, self.catalog, approvals, turn_limits, now=now,
            delivery_lock=outbox.lock, is_paused=functools.partial(hidden, paused, memory),
            memory=memory, board=board, fences=leases, skills=self.skills, metrics=m,
            tracing=t,
        )  # fmt: skip
        pauses = CapPauses(
            store, outbox, daily_token_cap=s.daily_token_cap, runs_per_hour=s.runs_per_hour,
            now=now, metrics=m,
        )  # fmt: skip
        workers = ChatWorkers(
            store, turns, outbox, pauses, leases, recovery, edits=edits, memory=memory, now=now,
            scope=scope, media=media_intake(s, channel, self.model.name), board=board, metrics=m,
            tracing=t,
        )  # fmt: skip
        wakeups = Wakeups(workers, outbox)
        scheduler = JobScheduler(
            store, on_due=wakeups.job_due, misfire_grace_s=s.job_misfire_grace_s,
            sync_every_s=s.job_sync_s, now=now, scope=scope,
        )  # fmt: skip
        # The built-ins are part of the registry the turns were built with, and the scheduler
        # wakes those turns' workers: the one cycle among the parts, closed here.
        self.builtins.bind(deliver=wakeups.deliver_soon, jobs_changed=scheduler.sync)
        connector_sheet = ConnectorSheet(
            store, channel, turns.offers, paused=paused, memory=memory, board=board
        )
        job_sheet = JobSheet(store, channel, now=now, jobs_changed=scheduler.sync)
        info = StatusInfo(
            model=self.model.name, fallbacks=tuple(s.fallback_models),
            database_kind=self.db.kind, daily_token_cap=s.daily_token_cap,
            runs_per_hour=s.runs_per_hour,
        )  # fmt: skip
        status = Status(store, turns.offers, paused, memory, info, now=now, board=board)
        skill_sheet = SkillSheet(self.skills, channel)
        commands = Commands(
            store, turns, approvals, edits, memory, connector_sheet, job_sheet, status,
            holder=leases.holder,
            remote=remote_commands(self.remote, store, channel, self.connectors, wakeups, now),
            web=WebLinks(store, base_url=self._web_base, now=now) if scope.only is None else None,
            skills=skill_sheet,
        )  # fmt: skip
        router = Router(
            [
                commands,
                ApprovalTaps(store, channel, approvals),
                EditTaps(store, channel, edits),
                SheetTaps(store, channel, ConnectorButton, connector_sheet),
                SheetTaps(store, channel, JobButton, job_sheet),
                SheetTaps(store, channel, SkillButton, skill_sheet),
            ],
            store,
            channel,
        )
        inbox = Inbox(
            store, channel, workers, outbox, router, background,
            allowed_users=allowed_users, now=now, shown_bare=commands.shown_bare,
        )  # fmt: skip
        chats = Chats(
            store, inbox, workers, outbox, background, recovery,
            approvals=approvals, edits=edits, owners=allowed_users, scope=scope,
        )  # fmt: skip
        web = WebDeps(
            store, approvals, channel, now, allowed_users, wakeups.approval_decided,
            FailureThrottle(), registry, session_days=s.web.session_days, web_url=s.web_url,
            secure_cookies=self._web_base().startswith("https:"), daily_token_cap=s.daily_token_cap,
            runs_per_hour=s.runs_per_hour, job_daily_token_cap=s.job_daily_token_cap,
            connector_sheet=connector_sheet, job_sheet=job_sheet, jobs_changed=scheduler.sync,
            skills=self.skills,
        )  # fmt: skip
        return Running(
            chats, wakeups, scheduler, board, commands.menu(), background, scope.only is None,
            web, first_turn(store, memory, turns),
        )  # fmt: skip

    def _web_base(self) -> str:
        return web_base(self.settings, self.http.url if self.http is not None else None)

    async def _start(self, running: Running) -> None:
        """Connectors and the tool watch, then the chats, then the jobs (a due run is queued
        into its chat's worker)."""
        await self.connectors.start()
        self._watch = ToolWatch(self.store, self.catalog, running.chats.notify_owners)
        await self.skills.start(running.chats.notify_owners)  # a changed skill: told once
        await self._watch.sync(self.registry.toolsets, at_start=True)
        self.switchboard = running.board
        await running.board.sync()  # the switches as stored, after the watch wrote its own
        for part, warm in running.warm_ups:  # beside the chats' start, not before it
            self.warm_up.start(part, warm)
        self.chats = running.chats
        await running.chats.start()
        if running.prunes:
            days, store, now = retention_days(self.settings), self.store, self._now
            running.background.spawn(sweep_retention(store, days, now))
        self.jobs = running.scheduler
        await running.scheduler.start()

    def _telegram(self) -> TelegramChannel:
        assert self.settings.telegram_token is not None
        return TelegramChannel(
            self.settings.telegram_token.get_secret_value(),
            self.settings.telegram_api_url,
            stream_replies=self.settings.stream_replies,
            metrics=self.metrics,
        )

    async def serve_telegram(self, stop: asyncio.Event) -> None:
        """Serve Telegram (polling, or webhook mode when PALUI_TELEGRAM_WEBHOOK_URL is set) and
        the HTTP server (webhooks, health) until `stop` is set. A channel given to the
        constructor is served instead of Telegram (it gets its inbounds from the test)."""
        telegram: TelegramChannel | None = None
        if self._channel is None:
            self.settings.require("telegram_token", "allowed_users")
            telegram = self._telegram()
            channel: Channel = telegram
        else:
            self.settings.require("allowed_users")
            channel = self._channel
        webhooks = load_webhooks(self.settings)  # before anything starts: secrets are checked
        running = self._assemble(channel, self.settings.allowed_users)
        chats = running.chats
        if telegram is not None:
            await telegram.initialize()
        try:
            await self._start(running)
            self.http = self._http_server(running, telegram, webhooks)
            await self.http.start()
            s = self.settings
            await self.warm_up.ready()  # the first answer must not pay for any first use
            if telegram is not None and s.telegram_webhook_url and s.telegram_webhook_secret:
                secret = s.telegram_webhook_secret.get_secret_value()
                await telegram.start_webhook(s.telegram_webhook_url, secret, running.menu)
            elif telegram is not None:
                await telegram.start_polling(chats.inbox, running.menu)
            self.start_up.ready()
            log.info("palui_running", database=self.db.kind, model=self.model.name)
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

    def _http_server(
        self,
        running: Running,
        telegram: TelegramChannel | None,
        webhooks: dict[str, WebhookSpec],
    ) -> HttpServer:
        s = self.settings
        telegram_webhook = None
        if telegram is not None and s.telegram_webhook_url and s.telegram_webhook_secret:
            telegram_webhook = TelegramWebhook(
                s.telegram_webhook_secret.get_secret_value(),
                functools.partial(telegram.feed, running.chats.inbox),
            )
        return HttpServer(
            self.store, host=s.http_host, port=s.http_port, webhooks=webhooks,
            on_webhook_stored=running.wakeups.webhook_stored, telegram=telegram_webhook,
            connectors=lambda: [toolset.status() for toolset in self.registry.toolsets],
            max_bytes=s.webhook_max_bytes, rate_per_min=s.webhook_rate_per_min,
            console=console_app(running.web), trusted_proxies=s.http_trusted_proxies,
            oauth=oauth_routes(self.remote), process=self.start_up,
            metrics=self.metrics, metrics_token=secret(s.http.metrics_token),
        )  # fmt: skip

    async def chat_console(
        self, read_line: Callable[[str], str], out: TextIO | None = None
    ) -> None:
        """The same engine in a terminal: one line in, the reply out (to stdout unless `out`),
        until EOF or /quit. Approval cards become y/n questions. It serves the console chat
        alone: on the daemon's database, Telegram chats' replies, messages, jobs and webhooks
        wait for the daemon."""
        out = out or sys.stdout  # looked up now, not at import: a redirected stdout is used
        channel = ConsoleChannel(out, CONSOLE_CHAT_ID)
        running = self._assemble(
            channel, frozenset({CONSOLE_USER.id}), ChatScope(only=CONSOLE_CHAT_ID)
        )
        chats = running.chats
        await self._start(running)
        out.write("Palui in the terminal. Type a message; /help for commands, /quit to leave.\n")
        try:
            while True:
                try:
                    line = await asyncio.to_thread(read_line, "you> ")
                except EOFError:
                    break
                if line.strip() in {"/quit", "/exit"}:
                    break
                if line.strip():
                    await self._console_event(chats, text=line.strip())
                while channel.pending_cards:
                    card = channel.pending_cards.pop(0)
                    try:
                        answer = await asyncio.to_thread(read_line, "Approve? [y/N] ")
                    except EOFError:
                        answer = "n"
                    data = channel.decision(card, answer.strip().lower() in {"y", "yes"})
                    await self._console_event(chats, callback_data=data)
        finally:
            await running.scheduler.stop()
            await chats.close()

    @staticmethod
    async def _console_event(
        chats: Chats, *, text: str | None = None, callback_data: str | None = None
    ) -> None:
        # Negative ids never collide with Telegram's positive update ids.
        inbound = Inbound(
            update_id=-time.time_ns(), chat_id=CONSOLE_CHAT_ID, user=CONSOLE_USER, text=text,
            callback_query_id="console" if callback_data else None, callback_data=callback_data,
        )  # fmt: skip
        await chats.accept(inbound)
        await chats.wait_idle(CONSOLE_CHAT_ID)
