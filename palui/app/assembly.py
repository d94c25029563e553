"""The parts that talk to a chat, built in dependency order for one channel (`assemble`), and
what serving that channel needs of them (`Running`). Part of the composition root: only
`palui.app` calls it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from palui.app.leasing import leasing
from palui.app.parts import (
    hidden,
    limits,
    media_intake,
    memory_config,
    model_chooser,
    status_info,
    voice_replies,
)
from palui.app.remote import remote_commands
from palui.app.warmup import Warm, first_turn
from palui.approvals.decisions import Approvals
from palui.approvals.edits import EditFlow
from palui.callbacks import ConnectorButton, JobButton, ModelButton, SkillButton
from palui.chat.background import Background
from palui.chat.chats import Chats
from palui.chat.inbox import Inbox
from palui.chat.pauses import CapPauses
from palui.chat.wakeups import Wakeups
from palui.chat.workers import ChatWorkers
from palui.delivery.outbox import Outbox
from palui.domain import EVERY_CHAT, ChatScope
from palui.http import FailureThrottle
from palui.interact.commands import Commands
from palui.interact.connector_sheet import ConnectorSheet
from palui.interact.job_sheet import JobSheet
from palui.interact.model_sheet import ModelSheet
from palui.interact.paused import PausedConnectors
from palui.interact.router import Router
from palui.interact.skill_sheet import SkillSheet
from palui.interact.status import Status
from palui.interact.taps import ApprovalTaps, EditTaps, SheetTaps
from palui.interact.web_link import WebLinks
from palui.jobs.scheduler import JobScheduler
from palui.memory import Memory
from palui.ports import Channel
from palui.tools.switchboard import Switchboard, catalog_reload
from palui.turns.runner import TurnRunner
from palui.web.deps import WebDeps

if TYPE_CHECKING:
    from palui.app.root import Palui


@dataclass(frozen=True, slots=True)
class Running:
    """The parts one channel's serving needs, built together by `assemble`."""

    chats: Chats
    wakeups: Wakeups
    scheduler: JobScheduler
    board: Switchboard
    menu: list[tuple[str, str]]
    background: Background
    prunes: bool  # the daily retention prune: the daemon's, not a one-chat console's
    web: WebDeps  # what the web console's pages read and change
    warm_ups: tuple[tuple[str, Warm], ...]  # what a first turn would load: `palui.app.warmup`
    channel_back: Callable[[], None]  # the channel answers again: the outbox sends what waited


def assemble(
    app: Palui, channel: Channel, allowed_users: frozenset[int], scope: ChatScope = EVERY_CHAT
) -> Running:
    """Every part that talks to a chat, built in dependency order for one channel; the
    senders, workers, recovery and jobs only for the chats of `scope`."""
    s, store, now, registry = app.settings, app.store, app.now, app.registry
    m, t = app.metrics, app.tracing
    turn_limits = limits(s, app.tool_rules)
    approvals = Approvals(
        store,
        channel,
        ttl_s=s.approval_ttl_s,
        now=now,
        approver=s.groups.approver,
        metrics=m,
    )
    edits = EditFlow(store, channel, approvals, registry, app.tool_rules, now=now)
    paused = PausedConnectors(store.tool_settings)
    memory = Memory(store, app.model, registry, memory_config(s), is_paused=paused.is_paused)
    # The database is the truth for every switch: each process reloads its cached ones when
    # the settings version moved (a tap in another process), before a turn's offer.
    board = Switchboard(
        store.tool_settings.version,
        [catalog_reload(store, app.catalog), paused.load, memory.refresh, app.skills.reload],
    )
    memory.follow(board)  # its switches are the board's: no read of their own per turn
    background = Background()
    leases, senders, recovery = leasing(store, s.lease_ttl_s, scope, m)
    outbox = Outbox(
        store,
        channel,
        senders,
        background,
        scope=scope,
        chat_leases=leases,
        metrics=m,
        tracing=t,
        voice=voice_replies(s),
    )
    turns = TurnRunner(
        store,
        app.model,
        channel,
        registry,
        app.catalog,
        approvals,
        turn_limits,
        now=now,
        delivery_lock=outbox.lock,
        is_paused=functools.partial(hidden, paused, memory),
        memory=memory,
        board=board,
        fences=leases,
        skills=app.skills,
        metrics=m,
        tracing=t,
        choose=model_chooser(s, app.model),
        on_stopped=app.connectors.questions.stopped,  # /stop cancels the turn's questions
    )
    pauses = CapPauses(
        store,
        outbox,
        daily_token_cap=s.daily_token_cap,
        runs_per_hour=s.runs_per_hour,
        now=now,
        metrics=m,
    )
    workers = ChatWorkers(
        store,
        turns,
        outbox,
        pauses,
        leases,
        recovery,
        edits=edits,
        memory=memory,
        now=now,
        scope=scope,
        media=media_intake(s, channel, app.model.name),
        board=board,
        metrics=m,
        tracing=t,
    )
    wakeups = Wakeups(workers, outbox)
    scheduler = JobScheduler(
        store,
        on_due=wakeups.job_due,
        misfire_grace_s=s.job_misfire_grace_s,
        sync_every_s=s.job_sync_s,
        now=now,
        scope=scope,
    )
    # The built-ins are part of the registry the turns were built with, and the scheduler
    # wakes those turns' workers: the one cycle among the parts, closed here.
    app.builtins.bind(deliver=wakeups.deliver_soon, jobs_changed=scheduler.sync)
    remote = remote_commands(app.remote, store, channel, app.connectors, wakeups, now)
    connector_sheet = ConnectorSheet(
        store,
        channel,
        turns.offers,
        paused=paused,
        memory=memory,
        board=board,
        connect=remote.connect_from_card if app.remote is not None else None,  # 🔑 Connect
    )
    job_sheet = JobSheet(store, channel, now=now, jobs_changed=scheduler.sync)
    info = status_info(s, app.model.name, app.db.kind)
    status = Status(store, turns.offers, paused, memory, info, now=now, board=board)
    skill_sheet = SkillSheet(app.skills, channel)
    models = ModelSheet(store, channel, s.choosable_models or (app.model.name,))
    commands = Commands(
        store,
        turns,
        approvals,
        edits,
        memory,
        connector_sheet,
        job_sheet,
        status,
        holder=leases.holder,
        remote=remote,
        web=WebLinks(store, base_url=app.base_url, now=now) if scope.only is None else None,
        skills=skill_sheet,
        models=models,
        speaks=s.tts_model is not None,
    )
    router = Router(
        [commands],
        [
            ApprovalTaps(store, channel, approvals),
            EditTaps(store, channel, edits),
            SheetTaps(store, channel, ConnectorButton, connector_sheet),
            SheetTaps(store, channel, JobButton, job_sheet),
            SheetTaps(store, channel, SkillButton, skill_sheet),
            SheetTaps(store, channel, ModelButton, models),
            remote.questions,
        ],
        store,
        channel,
    )
    inbox = Inbox(
        store,
        channel,
        workers,
        outbox,
        router,
        background,
        allowed_users=allowed_users,
        now=now,
        shown_bare=commands.shown_bare,
    )
    chats = Chats(
        store,
        inbox,
        workers,
        outbox,
        background,
        recovery,
        approvals=approvals,
        edits=edits,
        owners=allowed_users,
        scope=scope,
    )
    web = WebDeps(
        store,
        approvals,
        now,
        allowed_users,
        wakeups.approval_decided,
        FailureThrottle(),
        registry,
        session_days=s.web.session_days,
        web_url=s.web_url,
        secure_cookies=app.base_url().startswith("https:"),
        daily_token_cap=s.daily_token_cap,
        runs_per_hour=s.runs_per_hour,
        job_daily_token_cap=s.job_daily_token_cap,
        connector_sheet=connector_sheet,
        job_sheet=job_sheet,
        jobs_changed=scheduler.sync,
        skills=app.skills,
        sign_ins=remote if app.remote is not None else None,
    )
    return Running(
        chats,
        wakeups,
        scheduler,
        board,
        commands.menu(),
        background,
        scope.only is None,
        web,
        first_turn(store, memory, turns),
        outbox.retry_stuck,
    )
