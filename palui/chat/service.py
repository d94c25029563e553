"""The chat service: inbound event -> inbox -> turn -> persisted reply -> outbox -> channel.

Rules it keeps (DESIGN §1.1, §3):
- an event is stored in the inbox before `accept` returns, so the channel may then acknowledge it;
- a chat runs one turn at a time; messages that arrive meanwhile wait in the inbox and the next
  turn answers them together;
- a turn's reply is committed with the turn (history + outbox + inbox done) in one transaction,
  then delivered; a crash between the two re-delivers, it never loses the reply;
- `/stop` and the other commands are answered at once, never sent to the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from palui.approvals.decisions import Approvals
from palui.approvals.edits import EditFlow, owns_tap
from palui.chat.caps import check_caps
from palui.chat.leases import RETRY_S as LEASE_RETRY_S
from palui.chat.leases import ChatLeases
from palui.chat.recovery import Recovery
from palui.db import InboxItem, Store, day_start, hour_ago
from palui.domain import RECALL_ID, ChatUser, ConnectorState, ConnectorStatus, Inbound
from palui.errors import ChannelError
from palui.interact.connector_sheet import ConnectorSheet, SheetTap
from palui.interact.job_sheet import JobSheet, JobTap
from palui.jobs.runs import admit_run
from palui.logs import bound, get_logger
from palui.memory import Memory, MemoryConfig
from palui.memory.keeper import SaveResult
from palui.ports import Channel, ChatModel
from palui.tools.catalog import ToolCatalog
from palui.tools.registry import ToolRegistry
from palui.turns.runner import Limits, TurnRunner
from palui.turns.stop import stopped_text

log = get_logger("palui.chat.service")

COMMANDS: dict[str, str] = {
    "start": "What Palui is",
    "help": "What Palui can do and the commands",
    "new": "Start a fresh conversation",
    "stop": "Stop what I'm doing now",
    "status": "Model, usage and limits",
    "approvals": "Approvals waiting for you",
    "connectors": "Connectors, their tools and switches",
    "jobs": "Scheduled jobs: pause or delete them",
}
OUTBOX_RETRY_S = 5.0
APPROVAL_SWEEP_S = 30.0

HELP_TEXT = """\
I'm Palui, your assistant. Send me a message and I'll answer.

Commands:
/new — start a fresh conversation
/stop — stop what I'm doing now
/status — model, usage and limits
/approvals — approvals waiting for you
/connectors — connectors, their tools and switches
/jobs — scheduled jobs (ask me to schedule one, e.g. "every morning at 8, …")
/help — this message"""

START_TEXT = "Hi! " + HELP_TEXT


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """What /status reports besides the live numbers."""

    model: str
    fallbacks: tuple[str, ...] = ()
    database_kind: str = "SQLite"


@dataclass(slots=True)
class _ChatState:
    worker: asyncio.Task[None] | None = None
    rekick: bool = False  # a message arrived while the worker was looking: look again
    delivery: asyncio.Lock = field(default_factory=asyncio.Lock)
    paused_until: datetime | None = None  # a cap is hit; the chat was told; wake-up is set
    wake: asyncio.TimerHandle | None = None


def inbound_to_json(inbound: Inbound) -> dict[str, Any]:
    data = dataclasses.asdict(inbound)
    data["received_at"] = inbound.received_at.isoformat() if inbound.received_at else None
    return data


def inbound_from_json(data: dict[str, Any]) -> Inbound:
    fields = dict(data)
    fields["user"] = ChatUser(**fields["user"])
    if fields.get("received_at"):
        fields["received_at"] = datetime.fromisoformat(fields["received_at"])
    return Inbound(**fields)


def _format_int(value: int) -> str:
    return f"{value:,}"


class ChatService:
    def __init__(
        self,
        store: Store,
        model: ChatModel,
        channel: Channel,
        *,
        allowed_users: frozenset[int],
        limits: Limits,
        info: ServiceInfo,
        registry: ToolRegistry | None = None,
        catalog: ToolCatalog | None = None,
        approval_ttl_s: int = 86_400,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        memory: MemoryConfig | None = None,
    ) -> None:
        self._store = store
        self._channel = channel
        self._allowed = allowed_users
        self._limits = limits
        self._info = info
        self._registry = registry or ToolRegistry([])
        self._now = now
        catalog = catalog or ToolCatalog(None, {}, {})
        self._approvals = Approvals(store, channel, ttl_s=approval_ttl_s, now=now)
        self._edits = EditFlow(
            store, channel, self._approvals, self._registry, limits.tool_rules.guards, now=now
        )
        self._memory = Memory(
            store, model, self._registry, memory or MemoryConfig(),
            is_paused=lambda connector_id: self._sheet.is_paused(connector_id),
        )  # fmt: skip
        self._sheet = ConnectorSheet(store, channel, self._registry, catalog, memory=self._memory)
        self.jobs = JobSheet(store, channel, now=now)  # its scheduler is attached by the app
        self._turns = TurnRunner(
            store, model, channel, self._registry, catalog, self._approvals, limits, now=now,
            delivery_lock=lambda chat_id: self._chat(chat_id).delivery,
            is_paused=self._hidden, memory=self._memory,
        )  # fmt: skip
        self._chats: dict[int, _ChatState] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()  # commands and taps being answered
        self._closed = False
        self._leases = ChatLeases(store.leases)
        # Who sends a chat's outbox: one process at a time, so no reply part goes out twice.
        self._senders = ChatLeases(store.delivery_leases)
        self._recovery = Recovery(store.recovery, self._leases, self._senders)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Pick up where a previous process stopped: re-run its unfinished work."""
        # Only chats no live process holds: another process's turns here go on (chat.recovery).
        abandoned = (await self._recovery.at_start()).turns
        await self._sheet.load()
        pending = await self._store.inbox.pending()
        log.info("service_started", abandoned_turns=abandoned, pending_updates=len(pending))
        for item in pending:
            self._dispatch(item)
        for chat_id in {o.chat_id for o in await self._store.outbox.pending()}:
            self._spawn(self._deliver(chat_id))
        for chat_id in await self._store.approvals.chats_with_paused_turns():
            self._kick(chat_id)  # turns whose cards were decided while Palui was down
        for chat_id in await self._store.memory.chats_with_open_slices():
            self._kick(chat_id)  # a compaction or a save cut short: the worker finishes it
        for chat_id in await self._store.webhooks.chats_pending():
            self._kick(chat_id)  # webhook deliveries stored but not yet summarised
        for chat_id in {run.chat_id for run in await self._store.jobs.queued()}:
            self._kick(chat_id)  # job runs claimed but not started
        self._spawn(self._edits.recover())  # card edits a crash kept from being shown
        self._spawn(self._outbox_sweeper())
        self._spawn(self._approval_sweeper())
        self._spawn(self._recovery.sweep(self._kick))  # chats whose process died elsewhere

    async def close(self) -> None:
        """Stop all work; whatever was unfinished stays in the database for the next start."""
        self._closed = True
        for chat in self._chats.values():
            if chat.wake is not None:
                chat.wake.cancel()
        tasks = [*self._background, *(c.worker for c in self._chats.values() if c.worker)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def wait_idle(self, chat_id: int) -> None:
        """Wait until the chat has no turn or command running (its replies are then sent)."""
        state = self._chat(chat_id)
        while busy := [t for t in (state.worker, *self._handlers) if t and not t.done()]:
            await asyncio.wait(busy)

    async def notify_owners(self, text: str) -> None:
        """Tell every allowed user (in their private chat with the bot)."""
        for user_id in sorted(self._allowed):
            await self._store.outbox.add(user_id, text)
            self._spawn(self._deliver(user_id))

    # -- inbound --------------------------------------------------------------------------------

    def job_due(self, chat_id: int) -> None:
        """A job run of the chat was claimed (or a note about one stored): run it in the
        chat's turn order, and send the note."""
        self._kick(chat_id)
        self.deliver_soon(chat_id)

    def deliver_soon(self, chat_id: int) -> None:
        """Something new is in the chat's outbox (e.g. from palui__send_message)."""
        if not self._closed:
            self._spawn(self._deliver(chat_id))

    def webhook_stored(self, chat_id: int) -> None:
        """A webhook delivery for the chat is in the database: summarise it in the chat's turn
        order (after the running turn, never beside it)."""
        self._kick(chat_id)

    def is_allowed(self, user_id: int) -> bool:
        return user_id in self._allowed

    async def accept(self, inbound: Inbound) -> bool:
        """Take one event from the channel. Returns once it is safe to acknowledge it.

        A stranger's event is answered with one polite refusal a day and not stored.
        """
        if not self.is_allowed(inbound.user.id):
            log.warning("stranger_refused", user_id=inbound.user.id, chat_id=inbound.chat_id)
            if await self._store.strangers.first_today(inbound.user.id, self._now()):
                await self._notify_stranger(inbound)
            return False
        stored = await self._store.inbox.add(
            inbound.update_id, inbound.chat_id, inbound.user.id, inbound_to_json(inbound)
        )
        if not stored:
            log.info("update_redelivered", update_id=inbound.update_id, chat_id=inbound.chat_id)
            return False
        self._dispatch(InboxItem(inbound.update_id, inbound.chat_id, inbound.user.id,
                                 inbound_to_json(inbound), None))  # fmt: skip
        return True

    def _dispatch(self, item: InboxItem) -> None:
        inbound = inbound_from_json(item.payload)
        if inbound.callback_query_id or inbound.command is not None:
            self._spawn(self._handle_now(inbound), handler=True)
        else:
            self._kick(inbound.chat_id)

    async def _notify_stranger(self, inbound: Inbound) -> None:
        text = (
            "This is a private assistant. Ask its owner to add your user id "
            f"({inbound.user.id}) to PALUI_ALLOWED_USERS."
        )
        try:
            if inbound.callback_query_id:
                await self._channel.answer_callback(
                    inbound.callback_query_id, "Only the bot's owner can decide."
                )
            else:
                await self._channel.send_notice(inbound.chat_id, text)
        except ChannelError as exc:
            log.warning("stranger_notice_failed", error=str(exc))

    # -- commands -------------------------------------------------------------------------------

    async def _handle_now(self, inbound: Inbound) -> None:
        with bound(chat_id=inbound.chat_id, update_id=inbound.update_id):
            if inbound.callback_query_id and (inbound.callback_data or "").startswith("cx:"):
                await self._card_tap(inbound, self._sheet.tap)
                return
            if inbound.callback_query_id and (inbound.callback_data or "").startswith("jb:"):
                await self._card_tap(inbound, self.jobs.tap)
                return
            if inbound.callback_query_id and owns_tap(inbound.callback_data):
                notice = await self._edits.tap(inbound)  # ✏️ Edit on a card, and its questions
                await self._store.inbox.mark_done([inbound.update_id])
                with contextlib.suppress(ChannelError):
                    await self._channel.answer_callback(inbound.callback_query_id, notice)
                return
            if inbound.callback_query_id:
                result = await self._approvals.tap(inbound)
                await self._store.inbox.mark_done([inbound.update_id])
                with contextlib.suppress(ChannelError):
                    await self._channel.answer_callback(inbound.callback_query_id, result.notice)
                if result.resumable_turn:
                    self._kick(inbound.chat_id)
                await self._deliver(inbound.chat_id)
                return
            command = inbound.command or ""
            log.info("command", command=command)
            await self._memory.command_seen(inbound.chat_id)
            text = await self._command_reply(command, inbound.chat_id)
            text = await self._edits.after_command(inbound, text)  # /stop, /cancel: a card edit
            await self._store.inbox.mark_done([inbound.update_id])
            if text:
                await self._store.outbox.add(inbound.chat_id, text)
                await self._deliver(inbound.chat_id)

    async def _command_reply(self, command: str, chat_id: int) -> str | None:
        if command == "start":
            return START_TEXT
        if command == "help":
            return HELP_TEXT
        if command == "status":
            return await self.status_text()
        if command == "new":
            saved = await self._memory.save_for_new(chat_id)
            await self._store.chats.new_session(chat_id)
            return new_session_text(saved)
        if command == "stop":
            interrupted = self._turns.stop(chat_id)
            if interrupted is not None:
                return stopped_text(interrupted)
            if await self._turns.stops.request(chat_id, self._leases.holder):
                await self._deliver(chat_id)  # "Stopping…", stored with the request
                return None  # the process running the turn says "Stopped." once it has
            return "Nothing is running."
        if command == "approvals":
            return await self._approvals.pending_text(chat_id)
        if command == "connectors":
            if not await self._sheet.post(chat_id):
                return "No connectors are configured. Add an [mcp.<name>] section to palui.toml."
            return None
        if command == "jobs":
            if not await self.jobs.post(chat_id):
                return (
                    "No scheduled jobs in this chat. Ask me to schedule one, e.g. "
                    "“every morning at 8, summarise my notes”."
                )
            return None
        return f"I don't know the command /{command}. Send /help to see what I can do."

    async def _card_tap(
        self, inbound: Inbound, tap: Callable[[Inbound], Awaitable[SheetTap | JobTap]]
    ) -> None:
        """A button on a connector or job card: decide, answer the tap, redraw the card."""
        result = await tap(inbound)
        await self._store.inbox.mark_done([inbound.update_id])
        assert inbound.callback_query_id is not None
        try:
            await self._channel.answer_callback(inbound.callback_query_id, result.notice)
            if result.card is not None and result.message_id is not None:
                await self._channel.edit_card(result.chat_id, result.message_id, result.card)
        except ChannelError as exc:
            log.warning("card_redraw_failed", error=str(exc))

    async def status_text(self) -> str:
        now = self._now()
        tokens = await self._store.turns.tokens_since(day_start(now))
        runs = await self._store.turns.runs_since(hour_ago(now))
        model = self._info.model
        if self._info.fallbacks:
            model += f" (fallback: {', '.join(self._info.fallbacks)})"
        token_cap = self._limits.daily_token_cap
        run_cap = self._limits.runs_per_hour
        tokens_line = f"Tokens today: {_format_int(tokens)}"
        tokens_line += f" / {_format_int(token_cap)}" if token_cap else " (no cap)"
        runs_line = f"runs this hour: {runs}" + (f" / {run_cap}" if run_cap else " (no cap)")
        lines = [f"Palui · model {model}", f"{tokens_line} · {runs_line}"]
        statuses = [
            dataclasses.replace(status, state=ConnectorState.PAUSED)
            if self._sheet.is_paused(status.id)
            else status
            for status in (toolset.status() for toolset in self._registry.toolsets)
        ]
        memory_state = await self._memory.status_text()  # "auto-recall on (skipped 4 of ...)"
        if statuses:
            lines.append("Connectors")
            lines += [f"  {_connector_line(status, memory_state)}" for status in statuses]
        jobs = await self._store.jobs.all()
        if jobs:
            active = sum(job.enabled for job in jobs)
            off = f", {len(jobs) - active} off" if active < len(jobs) else ""
            lines.append(f"Jobs: {active} active{off}")
        lines.append(f"Database: {self._info.database_kind}")
        return "\n".join(lines)

    def _hidden(self, connector_id: str) -> bool:
        """A connector whose tools a turn is not offered: paused, or memory tools switched off."""
        return self._sheet.is_paused(connector_id) or not self._memory.offers_tools(connector_id)

    # -- turns ----------------------------------------------------------------------------------

    def _chat(self, chat_id: int) -> _ChatState:
        state = self._chats.get(chat_id)
        if state is None:
            state = self._chats[chat_id] = _ChatState()
        return state

    def _kick(self, chat_id: int) -> None:
        state = self._chat(chat_id)
        state.rekick = True
        if self._closed or (state.worker is not None and not state.worker.done()):
            return
        state.worker = asyncio.create_task(self._drain(chat_id), name=f"chat-{chat_id}")
        state.worker.add_done_callback(_log_failure)

    async def _drain(self, chat_id: int) -> None:
        """Run the chat's turns while this process holds its lease; else look again soon (the
        holder, maybe another process, answers what waits in the shared inbox meanwhile)."""
        state = self._chat(chat_id)
        while True:
            async with self._leases.hold(chat_id) as held:
                if held:
                    await self._recovery.chat_taken(chat_id)  # a previous holder that died
                    await self._drain_held(chat_id)
            if not held:
                break
            if not state.rekick:
                return  # else a kick came while the lease was being released: look again
        if state.wake is not None:
            state.wake.cancel()
        state.wake = asyncio.get_running_loop().call_later(LEASE_RETRY_S, self._kick, chat_id)

    async def _drain_held(self, chat_id: int) -> None:
        """Run turns for the chat until its inbox holds no waiting message."""
        state = self._chat(chat_id)
        while True:
            state.rekick = False
            for turn_id in await self._store.approvals.resumable(chat_id):
                await self._turns.resume(chat_id, turn_id)
                await self._deliver(chat_id)
            for delivery in await self._store.webhooks.pending(chat_id):
                if await self._paused(chat_id):
                    return  # the delivery stays stored; a timer wakes the chat when it lifts
                await self._turns.run_webhook_turn(delivery)
                await self._deliver(chat_id)
            for run in await self._store.jobs.queued(chat_id):
                if await self._paused(chat_id):
                    return  # the run stays queued; a timer wakes the chat when the cap lifts
                job = await admit_run(self._store, run, self._now())
                if job is not None:
                    await self._turns.run_job_turn(run, job)
                await self._deliver(chat_id)
            batch = [
                inbound
                for inbound in map(inbound_from_json, await self._pending_payloads(chat_id))
                if inbound.command is None and not inbound.callback_query_id
            ]
            batch = await self._edits.take_answers(batch)  # answers to a card's ✏️ Edit
            if not batch:
                if not state.rekick:  # between turns: compaction and auto-save
                    await self._memory.maintain(chat_id)
                if state.rekick:
                    continue
                return
            if any(i.text and not i.edited for i in batch) and await self._paused(chat_id):
                return  # the messages stay in the inbox; a timer wakes the chat when it lifts
            await self._answer(chat_id, batch)

    async def _paused(self, chat_id: int) -> bool:
        limits = self._limits
        hit = await check_caps(
            self._store, self._now(),
            daily_token_cap=limits.daily_token_cap, runs_per_hour=limits.runs_per_hour,
        )  # fmt: skip
        state = self._chat(chat_id)
        if hit is None:
            state.paused_until = None
            return False
        if state.paused_until != hit.lifts_at:
            log.info("turns_paused", chat_id=chat_id, cap=hit.cap, until=hit.lifts_at.isoformat())
            state.paused_until = hit.lifts_at
            await self._store.outbox.add(chat_id, hit.message)
            await self._deliver(chat_id)
        if state.wake is not None:
            state.wake.cancel()
        delay = max((hit.lifts_at - self._now()).total_seconds(), 0) + 1
        state.wake = asyncio.get_running_loop().call_later(delay, self._kick, chat_id)
        return True

    async def _pending_payloads(self, chat_id: int) -> list[dict[str, Any]]:
        return [item.payload for item in await self._store.inbox.pending(chat_id)]

    async def _answer(self, chat_id: int, batch: Sequence[Inbound]) -> None:
        readable = [i for i in batch if i.text and not i.edited]
        others = [i for i in batch if not (i.text and not i.edited)]
        for inbound in others:
            note = (
                "I saw your edit, but I don't re-run edited messages. Send it as a new message."
                if inbound.edited
                else "I can only read text messages for now."
            )
            await self._store.outbox.add(chat_id, note)
            await self._store.inbox.mark_done([inbound.update_id])
        if readable:
            await self._turns.run_chat_turn(chat_id, readable)
        await self._deliver(chat_id)

    # -- outbound -------------------------------------------------------------------------------

    async def _deliver(self, chat_id: int) -> None:
        """Send the chat's undelivered replies in order, recording each part as it goes out."""
        state = self._chat(chat_id)
        async with state.delivery, self._senders.hold(chat_id) as sending:
            if not sending:
                return  # another process sends this chat's outbox, reading it until it is empty
            while items := await self._store.outbox.pending(chat_id):
                for item in items:
                    parts = self._channel.render(item.text)
                    try:
                        for index in range(item.parts_sent, len(parts)):
                            await self._channel.send_part(chat_id, parts[index])
                            done = index + 1 == len(parts)
                            await self._store.outbox.part_sent(item.id, index + 1, done=done)
                    except ChannelError as exc:
                        if getattr(exc, "permanent", False):
                            log.error("reply_dropped", chat_id=chat_id, error=str(exc))
                            await self._store.outbox.part_sent(item.id, len(parts), done=True)
                            continue
                        log.warning("reply_delayed", chat_id=chat_id, error=str(exc))
                        return  # the sweeper tries again; order is kept by stopping here

    async def _approval_sweeper(self) -> None:
        """Expire overdue cards (their turns then resume, told nothing ran); post unsent cards."""
        while True:
            try:
                for chat_id in await self._approvals.expire_due():
                    self._kick(chat_id)
            except Exception:
                log.exception("approval_sweep_failed")
            await asyncio.sleep(APPROVAL_SWEEP_S)

    async def _outbox_sweeper(self) -> None:
        while True:
            await asyncio.sleep(OUTBOX_RETRY_S)
            try:
                for chat_id in {o.chat_id for o in await self._store.outbox.pending()}:
                    if not self._chat(chat_id).delivery.locked():
                        await self._deliver(chat_id)
            except Exception:
                log.exception("outbox_sweep_failed")

    def _spawn(self, coro: Any, *, handler: bool = False) -> None:
        task = asyncio.create_task(coro)
        for group in (self._background, self._handlers) if handler else (self._background,):
            group.add(task)
            task.add_done_callback(group.discard)
        task.add_done_callback(_log_failure)


def new_session_text(saved: SaveResult | None) -> str:
    fresh = "Started a fresh conversation. Earlier messages won't be used from now on."
    if saved is None:
        return fresh
    if saved.ok:
        return f"{fresh} What we talked about is saved in memory." if saved.saved else fresh
    return (
        f"{fresh}\nI couldn't save the last one to memory ({saved.reason}); "
        "I'll save it once recall answers again."
    )


def _connector_line(status: ConnectorStatus, memory_state: str | None = None) -> str:
    name = status.id.removeprefix("mcp-")
    if status.state == ConnectorState.CONNECTED and status.id == RECALL_ID and memory_state:
        return f"✅ {name} — {memory_state}"
    if status.state == ConnectorState.CONNECTED:
        return f"✅ {name} — {status.tool_count} tools"
    if status.state == ConnectorState.PAUSED:
        return f"⏸ {name} — paused"
    if status.state == ConnectorState.CONNECTING:
        return f"⏳ {name} — connecting"
    retry = f" (retrying in {status.retry_in_s:.0f} s)" if status.retry_in_s is not None else ""
    return f'⚠️ {name} — not connected: "{status.error or "unknown error"}"{retry}'


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background_task_failed", error=repr(task.exception()))
