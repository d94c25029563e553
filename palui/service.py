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
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from palui.agent.context import build_context
from palui.agent.turn import TurnDeps, run_turn
from palui.caps import check_caps
from palui.db import InboxItem, Store, day_start, hour_ago
from palui.domain import (
    ChatUser,
    Completion,
    ConnectorState,
    ConnectorStatus,
    Inbound,
    Reply,
    TurnKind,
    TurnStatus,
)
from palui.errors import ChannelError, ModelError, ModelUnavailable
from palui.logs import bound, get_logger
from palui.ports import Channel, ChatModel, ReplyStream
from palui.tools.executor import TurnTools
from palui.tools.registry import ToolOffer, ToolRegistry

log = get_logger("palui.service")

COMMANDS: dict[str, str] = {
    "start": "What Palui is",
    "help": "What Palui can do and the commands",
    "new": "Start a fresh conversation",
    "stop": "Stop what I'm doing now",
    "status": "Model, usage and limits",
}
TYPING_EVERY_S = 4.0  # Telegram shows "typing" for ~5 s per chat action
OUTBOX_RETRY_S = 5.0

HELP_TEXT = """\
I'm Palui, your assistant. Send me a message and I'll answer.

Commands:
/new — start a fresh conversation
/stop — stop what I'm doing now
/status — model, usage and limits
/help — this message"""

START_TEXT = "Hi! " + HELP_TEXT


@dataclass(frozen=True, slots=True)
class Limits:
    max_steps: int = 12
    turn_timeout_s: float = 120
    history_messages: int = 30
    daily_token_cap: int = 0
    runs_per_hour: int = 0
    max_tools: int = 30
    tool_result_chars: int = 16_000


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """What /status reports besides the live numbers."""

    model: str
    fallbacks: tuple[str, ...] = ()
    database_kind: str = "SQLite"


@dataclass(slots=True)
class _RunningTurn:
    turn_id: str
    task: asyncio.Task[Any]
    tools: TurnTools | None = None
    stop_requested: bool = False


@dataclass(slots=True)
class _ChatState:
    worker: asyncio.Task[None] | None = None
    rekick: bool = False  # a message arrived while the worker was looking: look again
    running: _RunningTurn | None = None
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
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._model = model
        self._channel = channel
        self._allowed = allowed_users
        self._limits = limits
        self._info = info
        self._registry = registry or ToolRegistry([])
        self._now = now
        self._chats: dict[int, _ChatState] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()  # commands and taps being answered
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Pick up where a previous process stopped: re-run its unfinished work."""
        abandoned = await self._store.turns.abandon_running("interrupted: Palui restarted")
        await self._store.tool_calls.mark_interrupted()
        pending = await self._store.inbox.pending()
        log.info("service_started", abandoned_turns=abandoned, pending_updates=len(pending))
        for item in pending:
            self._dispatch(item)
        for chat_id in {o.chat_id for o in await self._store.outbox.pending()}:
            self._spawn(self._deliver(chat_id))
        self._spawn(self._outbox_sweeper())

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

    # -- inbound --------------------------------------------------------------------------------

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
                await self._channel.answer_callback(inbound.callback_query_id, text[:190])
            else:
                await self._channel.send_notice(inbound.chat_id, text)
        except ChannelError as exc:
            log.warning("stranger_notice_failed", error=str(exc))

    # -- commands -------------------------------------------------------------------------------

    async def _handle_now(self, inbound: Inbound) -> None:
        with bound(chat_id=inbound.chat_id, update_id=inbound.update_id):
            if inbound.callback_query_id:
                # No buttons are live yet: every tap is stale by definition, and runs nothing.
                with contextlib.suppress(ChannelError):
                    await self._channel.answer_callback(
                        inbound.callback_query_id, "This button is no longer active."
                    )
                await self._store.inbox.mark_done([inbound.update_id])
                return
            command = inbound.command or ""
            log.info("command", command=command)
            text = await self._command_reply(command, inbound.chat_id)
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
            await self._store.chats.new_session(chat_id)
            return "Started a fresh conversation. Earlier messages won't be used from now on."
        if command == "stop":
            running = self._chat(chat_id).running
            if running is None or running.task.done():
                return "Nothing is running."
            interrupted = list(running.tools.in_flight.values()) if running.tools else []
            running.stop_requested = True
            running.task.cancel()
            notes = [
                f"{name} was interrupted; it may or may not have completed." for name in interrupted
            ]
            return "\n".join(["Stopped.", *notes])
        return f"I don't know the command /{command}. Send /help to see what I can do."

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
        statuses = [toolset.status() for toolset in self._registry.toolsets]
        if statuses:
            lines.append("Connectors")
            lines += [f"  {_connector_line(status)}" for status in statuses]
        lines.append(f"Database: {self._info.database_kind}")
        return "\n".join(lines)

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
        """Run turns for the chat until its inbox holds no waiting message."""
        state = self._chat(chat_id)
        while True:
            state.rekick = False
            batch = [
                inbound
                for inbound in map(inbound_from_json, await self._pending_payloads(chat_id))
                if inbound.command is None and not inbound.callback_query_id
            ]
            if not batch:
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
            await self._run_chat_turn(chat_id, readable)
        await self._deliver(chat_id)

    async def _run_chat_turn(self, chat_id: int, batch: Sequence[Inbound]) -> None:
        turn_id = uuid.uuid4().hex
        update_ids = [i.update_id for i in batch]
        with bound(chat_id=chat_id, turn_id=turn_id):
            session_id = await self._store.chats.current_session(chat_id)
            inputs = [(i.update_id, i.text or "") for i in batch]
            await self._store.turns.start(turn_id, chat_id, session_id, TurnKind.CHAT, inputs)
            history = await self._store.chats.history(session_id, self._limits.history_messages)
            messages = build_context(history.messages, summary=history.summary, now=self._now())
            offer = self._offer(history.messages[-6:])
            tools = TurnTools(
                offer, self._store.tool_calls, turn_id, result_limit=self._limits.tool_result_chars
            )

            async def record_usage(completion: Completion, latency_s: float) -> None:
                await self._store.turns.record_model_call(turn_id, chat_id, completion, latency_s)

            deps = TurnDeps(
                model=self._model,
                record_usage=record_usage,
                max_steps=self._limits.max_steps,
                timeout_s=self._limits.turn_timeout_s,
                tools=offer.specs,
                runner=tools,
            )
            stream = self._channel.streaming_reply(chat_id)
            if stream is not None:
                deps = dataclasses.replace(deps, on_delta=stream.push)
            log.info("turn_started", messages=len(batch), tools=len(offer.tools))
            task = asyncio.create_task(run_turn(deps, messages))
            running = self._chat(chat_id).running = _RunningTurn(turn_id, task, tools)
            typing = asyncio.create_task(self._keep_typing(chat_id))
            try:
                reply = await task
            except asyncio.CancelledError:
                this = asyncio.current_task()
                if not running.stop_requested or (this is not None and this.cancelling()):
                    raise  # shutdown: the inbox rows stay pending and run again after restart
                log.info("turn_stopped")
                if stream is not None:
                    await stream.abort("(stopped — this answer is incomplete)")
                await self._store.turns.finish(
                    turn_id, TurnStatus.CANCELLED, update_ids=update_ids, error="stopped by /stop"
                )
                return
            except Exception as exc:
                if stream is not None:
                    await stream.abort(None)
                await self._fail(turn_id, update_ids, exc)
                return
            finally:
                typing.cancel()
                self._chat(chat_id).running = None
            assert isinstance(reply, Reply)  # approvals are wired in the next change
            text = reply.text.strip() or "(The model returned an empty answer.)"
            outbox_id = await self._store.turns.finish(
                turn_id,
                TurnStatus.DONE,
                update_ids=update_ids,
                reply=text,
                steps=reply.steps,
                budget_hit=reply.budget_hit,
            )
            log.info("turn_done", steps=reply.steps, tokens=reply.usage.total_tokens)
            if stream is not None and outbox_id is not None:
                await self._finish_stream(chat_id, stream, outbox_id, text)

    async def _finish_stream(
        self, chat_id: int, stream: ReplyStream, outbox_id: int, text: str
    ) -> None:
        """Turn the streamed preview into the final answer; record the parts it delivered, so
        `_deliver` sends only what is left (and nothing twice)."""
        state = self._chat(chat_id)
        async with state.delivery:
            parts = self._channel.render(text)
            try:
                await stream.finish(text)
            except ChannelError as exc:
                log.warning("stream_finish_failed", error=str(exc))
            finally:
                sent = min(len(stream.message_ids), len(parts))
                await self._store.outbox.part_sent(outbox_id, sent, done=sent == len(parts))

    def _offer(self, recent: Sequence[Any]) -> ToolOffer:
        # The newest messages weigh most: they are last in the query and repeat the request.
        query = " ".join(message.content for message in recent)
        return self._registry.offer(query, self._limits.max_tools)

    async def _fail(self, turn_id: str, update_ids: list[int], exc: Exception) -> None:
        """A turn that could not answer: the person is told why, and it leaves no history."""
        if isinstance(exc, ModelUnavailable):
            log.warning("model_unavailable", error=str(exc))
            text = _unavailable_text(exc)
        elif isinstance(exc, ModelError):
            log.warning("model_error", error=str(exc))
            text = f"The model call failed ({exc}). Nothing was run."
        else:
            log.exception("turn_crashed")
            text = "Something went wrong on my side, sorry. Nothing was run. Try again?"
        await self._store.turns.finish(
            turn_id, TurnStatus.FAILED, update_ids=update_ids, reply=text, remember=False,
            error=str(exc) or repr(exc),
        )  # fmt: skip

    async def _keep_typing(self, chat_id: int) -> None:
        while True:
            with contextlib.suppress(ChannelError):
                await self._channel.typing(chat_id)
            await asyncio.sleep(TYPING_EVERY_S)

    # -- outbound -------------------------------------------------------------------------------

    async def _deliver(self, chat_id: int) -> None:
        """Send the chat's undelivered replies in order, recording each part as it goes out."""
        state = self._chat(chat_id)
        async with state.delivery:
            for item in await self._store.outbox.pending(chat_id):
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


def _connector_line(status: ConnectorStatus) -> str:
    name = status.id.removeprefix("mcp-")
    if status.state == ConnectorState.CONNECTED:
        return f"✅ {name} — {status.tool_count} tools"
    if status.state == ConnectorState.PAUSED:
        return f"⏸ {name} — paused"
    if status.state == ConnectorState.CONNECTING:
        return f"⏳ {name} — connecting"
    retry = f" (retrying in {status.retry_in_s:.0f} s)" if status.retry_in_s else ""
    return f'⚠️ {name} — not connected: "{status.error or "unknown error"}"{retry}'


def _unavailable_text(exc: ModelUnavailable) -> str:
    first_model, first_reason = exc.attempts[0] if exc.attempts else ("the model", "unknown")
    tried = " I tried the fallback too." if len(exc.attempts) > 1 else ""
    return (
        f"The model could not be reached ({first_model}: {first_reason}).{tried} Nothing was run."
    )


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background_task_failed", error=repr(task.exception()))
