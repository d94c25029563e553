"""Running a chat's turn end to end: context, tools, the streamed answer, pausing for approval
cards, resuming after the taps, and committing the outcome.

The service decides *when* a turn runs (one per chat, caps, the inbox); this module decides
*how*. A turn ends in one of four ways, each committed in one transaction: answered (reply in
history and outbox), paused (state and approvals stored), stopped by /stop, or failed (the
person is told why; nothing enters the history).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from palui.agent.context import build_context
from palui.agent.snapshot import dump_snapshot, load_snapshot
from palui.agent.turn import NeedsApproval, TurnDeps, resume_turn, run_turn
from palui.approvals.decisions import CHANGED, DENIED, EXPIRED, STILL_RUNNING, Approvals
from palui.db import History, Store
from palui.db.jobs import JobRecord, RunRecord
from palui.db.webhooks import Delivery
from palui.domain import (
    CallStage,
    Completion,
    Inbound,
    Message,
    Reply,
    Role,
    ToolCallRequest,
    ToolOutcome,
    TurnKind,
    TurnStatus,
)
from palui.errors import ChannelError, ModelError, ModelUnavailable
from palui.jobs.view import job_prompt
from palui.logs import bound, get_logger
from palui.memory import Memory, Recalled
from palui.policy.matrix import Decision, decide
from palui.policy.taint import TaintSource
from palui.ports import Channel, ChatModel, ReplyStream
from palui.tools.catalog import ToolCatalog
from palui.tools.names import full_name
from palui.tools.registry import ToolOffer, ToolRegistry
from palui.tools.rules import ToolRules
from palui.tools.runner import TurnTools
from palui.turns.stop import StopRequests, stopped_text
from palui.webhooks.rules import webhook_messages

log = get_logger("palui.turns.runner")

TYPING_EVERY_S = 4.0  # Telegram shows "typing" for ~5 s per chat action
IDEMPOTENT_RETRY_WINDOW = timedelta(minutes=2)  # "immediate" retry of a just-approved call
SCHEDULE_JOB = "palui__schedule_job"


@dataclass(frozen=True, slots=True)
class Limits:
    max_steps: int = 12
    turn_timeout_s: float = 120
    history_messages: int = 30
    daily_token_cap: int = 0
    runs_per_hour: int = 0
    max_tools: int = 30
    tool_result_chars: int = 16_000
    # Hooks, guards and the daily send cap (palui.tools.rules).
    tool_rules: ToolRules = dataclasses.field(default_factory=ToolRules)
    jobs_may_create_jobs: bool = False  # offer palui__schedule_job to a job's own run


@dataclass(slots=True)
class RunningTurn:
    turn_id: str
    task: asyncio.Task[Any]
    tools: TurnTools
    stop_requested: bool = False
    # Stopped by a /stop another process received: this process tells the person.
    stopped_text: str | None = None


def _taint_from_history(history: History) -> TaintSource | None:
    if not history.tainted:
        return None
    source = history.taint_source or "an earlier message"
    connector, _, tool = source.partition(":")
    return TaintSource(connector, tool or None, history.taint_turns_ago or 1)


def _taint_json(taint: TaintSource | None) -> dict[str, Any] | None:
    if taint is None:
        return None
    return {"connector": taint.connector_id, "tool": taint.tool, "ago": taint.turns_ago}


def _taint_load(data: dict[str, Any] | None) -> TaintSource | None:
    return TaintSource(data["connector"], data["tool"], data["ago"]) if data else None


def _taint_label(taint: TaintSource | None) -> str | None:
    if taint is None:
        return None
    return f"{taint.connector_id}:{taint.tool}" if taint.tool else taint.connector_id


class TurnRunner:
    def __init__(
        self,
        store: Store,
        model: ChatModel,
        channel: Channel,
        registry: ToolRegistry,
        catalog: ToolCatalog,
        approvals: Approvals,
        limits: Limits,
        *,
        now: Callable[[], datetime],
        delivery_lock: Callable[[int], asyncio.Lock],
        is_paused: Callable[[str], bool] = lambda connector_id: False,
        memory: Memory | None = None,
    ) -> None:
        self._memory = memory
        self._store = store
        self._model = model
        self._channel = channel
        self._registry = registry
        self._catalog = catalog
        self._approvals = approvals
        self._limits = limits
        self._now = now
        self._delivery_lock = delivery_lock
        self._is_paused = is_paused
        self.running: dict[int, RunningTurn] = {}
        # /stop received by another process (palui.turns.stop): PostgreSQL only.
        self.stops = StopRequests(store.stop_requests, enabled=not store.db.is_sqlite)

    # -- /stop -----------------------------------------------------------------------------------

    def stop(self, chat_id: int) -> list[str] | None:
        """Cancel the chat's running turn; the names of the tool calls it interrupted."""
        running = self.running.get(chat_id)
        if running is None or running.task.done():
            return None
        return _cancel(running)

    def _stop_requested_elsewhere(self, running: RunningTurn) -> None:
        if not running.task.done() and not running.stop_requested:
            running.stopped_text = stopped_text(_cancel(running))

    # -- the offer -------------------------------------------------------------------------------

    def _allow(self, kind: TurnKind, tainted: bool) -> Callable[[str, Any], bool]:
        def allow(connector_id: str, remote: Any) -> bool:
            if self._is_paused(connector_id):
                return False
            entry = self._catalog.entry(connector_id, remote)
            job_spawn = kind is TurnKind.SCHEDULED and entry.name == SCHEDULE_JOB
            if job_spawn and not self._limits.jobs_may_create_jobs:
                return False  # a job can't spawn jobs unless the operator allows it
            decision = decide(entry.classification.tool_class, kind, tainted)
            return entry.enabled and decision is not Decision.NOT_OFFERED

        return allow

    def offer(self, recent: Sequence[Message], kind: TurnKind, tainted: bool) -> ToolOffer:
        # The newest messages say most about what is wanted now.
        query = " ".join(message.content for message in recent)
        return self._registry.offer(query, self._limits.max_tools, self._allow(kind, tainted))

    def _offer_named(self, names: Sequence[str], kind: TurnKind, tainted: bool) -> ToolOffer:
        wanted = set(names)
        allow = self._allow(kind, tainted)
        return self._registry.offer(
            "", len(wanted), lambda cid, remote: full_name(cid, remote.name) in wanted
            and allow(cid, remote),
        )  # fmt: skip

    # -- a new turn ------------------------------------------------------------------------------

    async def run_chat_turn(self, chat_id: int, batch: Sequence[Inbound]) -> None:
        turn_id = uuid.uuid4().hex
        update_ids = [i.update_id for i in batch]
        with bound(chat_id=chat_id, turn_id=turn_id):
            session_id = await self._store.chats.current_session(chat_id)
            inputs = [(i.update_id, i.text or "") for i in batch]
            await self._store.turns.start(turn_id, chat_id, session_id, TurnKind.CHAT, inputs)
            if self._memory is not None:
                history = await self._memory.history(session_id)
                said = " ".join(text for _, text in inputs)
                recalled = await self._memory.recall(chat_id, turn_id, said)
            else:
                limit = self._limits.history_messages
                history = await self._store.chats.history(session_id, limit)
                recalled = Recalled()
            messages = build_context(
                history.messages, summary=history.summary, memory=recalled.text, now=self._now()
            )
            taint = _taint_from_history(history) or recalled.taint
            offer = self.offer(history.messages[-6:], TurnKind.CHAT, taint is not None)
            tools = await self._tools(offer, turn_id, chat_id, TurnKind.CHAT, taint)
            deps = self._deps(turn_id, chat_id, tools)
            stream = self._channel.streaming_reply(chat_id)
            if stream is not None:
                deps = dataclasses.replace(deps, on_delta=stream.push)
            log.info("turn_started", messages=len(batch), tools=len(offer.tools))
            await self._drive(chat_id, turn_id, run_turn(deps, messages), tools, update_ids, stream)

    async def run_webhook_turn(self, delivery: Delivery) -> None:
        """Summarise a stored webhook delivery into its chat: tainted from the start (the payload
        is untrusted), offered no tools, and a tool call the model makes up runs nothing."""
        turn_id, chat_id = uuid.uuid4().hex, delivery.chat_id
        if not await self._store.webhooks.claim(delivery, turn_id):
            return  # another worker or process has it
        with bound(chat_id=chat_id, turn_id=turn_id, delivery_id=delivery.id):
            session_id = await self._store.chats.current_session(chat_id)
            await self._store.turns.start(turn_id, chat_id, session_id, TurnKind.WEBHOOK, [])
            tools = TurnTools(
                ToolOffer({}), self._store.tool_calls, turn_id, kind=TurnKind.WEBHOOK,
                taint=TaintSource(f"webhook:{delivery.webhook}"), chat_id=chat_id,
            )  # fmt: skip
            deps = dataclasses.replace(self._deps(turn_id, chat_id, tools), tools=(), runner=None)
            messages = webhook_messages(
                delivery.webhook, delivery.instructions, delivery.content_type, delivery.body
            )
            log.info("turn_started", kind="webhook", webhook=delivery.webhook)
            loop = _headed(run_turn(deps, messages), f"📨 Webhook {delivery.webhook}")
            await self._drive(chat_id, turn_id, loop, tools, [], None)
        # Ended (answered, failed and told, or /stop): never summarised again.
        await self._store.webhooks.mark_handled(delivery.id)

    async def run_job_turn(self, run: RunRecord, job: JobRecord) -> None:
        """A job's run: a `scheduled` turn in the job's chat, started once (the run row moves
        from queued to started first; it records the turn, so tokens count per job)."""
        turn_id, chat_id = uuid.uuid4().hex, job.chat_id
        if not await self._store.jobs.start_run(run.id, turn_id):
            return  # another worker or process has it
        with bound(chat_id=chat_id, turn_id=turn_id, job_id=job.id):
            session_id = await self._store.chats.current_session(chat_id)
            await self._store.turns.start(turn_id, chat_id, session_id, TurnKind.SCHEDULED, [])
            prompt = Message(Role.USER, job_prompt(job))
            messages = build_context([prompt], now=self._now())
            offer = self.offer([prompt], TurnKind.SCHEDULED, False)
            tools = await self._tools(offer, turn_id, chat_id, TurnKind.SCHEDULED, None)
            deps = self._deps(turn_id, chat_id, tools)
            log.info("turn_started", kind="scheduled", tools=len(offer.tools))
            loop = _headed(run_turn(deps, messages), f"⏰ Job #{job.id}")
            await self._drive(chat_id, turn_id, loop, tools, [], None)

    async def _tools(
        self,
        offer: ToolOffer,
        turn_id: str,
        chat_id: int,
        kind: TurnKind,
        taint: TaintSource | None,
    ) -> TurnTools:
        since = self._now() - IDEMPOTENT_RETRY_WINDOW
        recent = await self._store.approvals.recent_executed_digests(chat_id, since)
        return TurnTools(
            offer, self._store.tool_calls, turn_id, kind=kind, catalog=self._catalog,
            taint=taint, result_limit=self._limits.tool_result_chars,
            just_approved=frozenset(recent), ledger=self._store.actions, chat_id=chat_id,
            rules=self._limits.tool_rules,
            notify=self._store.outbox.add, now=self._now,
        )  # fmt: skip

    def _deps(self, turn_id: str, chat_id: int, tools: TurnTools) -> TurnDeps:
        async def record_usage(completion: Completion, latency_s: float) -> None:
            await self._store.turns.record_model_call(turn_id, chat_id, completion, latency_s)

        return TurnDeps(
            model=self._model,
            record_usage=record_usage,
            max_steps=self._limits.max_steps,
            timeout_s=self._limits.turn_timeout_s,
            tools=tools.offer.specs,
            runner=tools,
        )

    # -- resuming after the taps -----------------------------------------------------------------

    async def resume(self, chat_id: int, turn_id: str) -> None:
        await self.stops.forget(turn_id)  # a /stop its earlier drive ended before taking
        state = await self._store.approvals.claim_resume(turn_id)
        if state is None:
            return  # another worker or process has it
        with bound(chat_id=chat_id, turn_id=turn_id):
            snapshot, extra = load_snapshot(state)
            kind = TurnKind(extra.get("kind", TurnKind.CHAT))
            taint = _taint_load(extra.get("taint"))
            offer = self._offer_named(extra.get("offer", []), kind, taint is not None)
            tools = await self._tools(offer, turn_id, chat_id, kind, taint)
            log.info("turn_resumed")
            held = {call.id for call in snapshot.step_calls} - set(snapshot.outcomes)
            decided = await self._approvals.outcomes(turn_id, tools, snapshot.steps, held)
            await _record_not_approved(tools, snapshot.step_calls, decided, snapshot.steps)
            deps = self._deps(turn_id, chat_id, tools)
            loop = resume_turn(deps, snapshot, decided)
            job_id = await self._store.jobs.job_of_turn(turn_id)
            if job_id is not None:
                loop = _headed(loop, f"⏰ Job #{job_id}")
            await self._drive(chat_id, turn_id, loop, tools, [], None)

    # -- one drive of the loop: to an answer, a pause, a stop or a failure -----------------------

    async def _drive(
        self,
        chat_id: int,
        turn_id: str,
        loop: Awaitable[Reply | NeedsApproval],
        tools: TurnTools,
        update_ids: list[int],
        stream: ReplyStream | None,
    ) -> None:
        task: asyncio.Task[Reply | NeedsApproval] = asyncio.ensure_future(loop)
        running = self.running[chat_id] = RunningTurn(turn_id, task, tools)
        typing = asyncio.create_task(self._keep_typing(chat_id))
        watcher = self.stops.watch(turn_id, lambda: self._stop_requested_elsewhere(running))
        try:
            result = await task
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if not running.stop_requested or (this is not None and this.cancelling()):
                raise  # shutdown: the inbox rows stay pending and run again after restart
            log.info("turn_stopped")
            if stream is not None:
                await stream.abort("(stopped — this answer is incomplete)")
            told = running.stopped_text  # None: the /stop's own reply already said it
            await self._end(
                turn_id, TurnStatus.CANCELLED, update_ids, tools, error="stopped", reply=told,
                remember=False,
            )  # fmt: skip
            return
        except Exception as exc:
            if stream is not None:
                await stream.abort(None)
            await self._fail(turn_id, update_ids, tools, exc)
            return
        finally:
            typing.cancel()
            if watcher is not None:
                watcher.cancel()
            self.running.pop(chat_id, None)
        if isinstance(result, NeedsApproval):
            if stream is not None:
                await stream.abort("(waiting for your approval below)")
            await self._pause(chat_id, turn_id, result, tools, update_ids)
            return
        text = result.text.strip() or "(The model returned an empty answer.)"
        outbox_id = await self._end(
            turn_id, TurnStatus.DONE, update_ids, tools, reply=text, steps=result.steps,
            budget_hit=result.budget_hit,
        )  # fmt: skip
        log.info("turn_done", steps=result.steps, tokens=result.usage.total_tokens)
        if stream is not None and outbox_id is not None:
            await self._finish_stream(chat_id, stream, outbox_id, text)

    async def _end(
        self,
        turn_id: str,
        status: TurnStatus,
        update_ids: list[int],
        tools: TurnTools,
        **fields: Any,
    ) -> int | None:
        outbox_id = await self._store.turns.finish(
            turn_id, status, update_ids=update_ids, tainted=tools.tainted,
            taint_source=_taint_label(tools.taint), **fields,
        )  # fmt: skip
        return outbox_id

    async def _pause(
        self,
        chat_id: int,
        turn_id: str,
        paused: NeedsApproval,
        tools: TurnTools,
        update_ids: list[int],
    ) -> None:
        approvals = await self._approvals.open(turn_id, chat_id, paused.held, tools)
        await tools.record_held(paused.held, paused.snapshot.steps)
        extra = {
            "kind": str(tools.kind),
            "taint": _taint_json(tools.taint),
            "offer": list(tools.offer.tools),
        }
        await self._store.approvals.pause_turn(
            turn_id, chat_id, dump_snapshot(paused.snapshot, extra), approvals,
            update_ids=update_ids, tainted=tools.tainted, taint_source=_taint_label(tools.taint),
        )  # fmt: skip
        log.info("turn_paused", held=[call.name for call in paused.held])
        descriptions = {name: t.remote.description for name, t in tools.offer.tools.items()}
        await self._approvals.post_cards(turn_id, descriptions)

    async def _finish_stream(
        self, chat_id: int, stream: ReplyStream, outbox_id: int, text: str
    ) -> None:
        """Turn the streamed preview into the final answer; record the parts it delivered, so
        the outbox sends only what is left (and nothing twice)."""
        async with self._delivery_lock(chat_id):
            parts = self._channel.render(text)
            try:
                await stream.finish(text)
            except ChannelError as exc:
                log.warning("stream_finish_failed", error=str(exc))
            finally:
                sent = min(len(stream.message_ids), len(parts))
                await self._store.outbox.part_sent(outbox_id, sent, done=sent == len(parts))

    async def _fail(
        self, turn_id: str, update_ids: list[int], tools: TurnTools, exc: Exception
    ) -> None:
        """A turn that could not answer: the person is told why; it leaves no history."""
        if isinstance(exc, ModelUnavailable):
            log.warning("model_unavailable", error=str(exc))
            text = unavailable_text(exc)
        elif isinstance(exc, ModelError):
            log.warning("model_error", error=str(exc))
            text = f"The model call failed ({exc}). Nothing was run."
        else:
            log.exception("turn_crashed")
            text = "Something went wrong on my side, sorry. Nothing was run. Try again?"
        await self._end(
            turn_id, TurnStatus.FAILED, update_ids, tools, reply=text, remember=False,
            error=str(exc) or repr(exc),
        )  # fmt: skip

    async def _keep_typing(self, chat_id: int) -> None:
        while True:
            with contextlib.suppress(ChannelError):
                await self._channel.typing(chat_id)
            await asyncio.sleep(TYPING_EVERY_S)


def _cancel(running: RunningTurn) -> list[str]:
    """Cancel a running turn; the names of the tool calls it interrupted."""
    interrupted = list(running.tools.in_flight.values())
    running.stop_requested = True
    running.task.cancel()
    return interrupted


async def _headed(loop: Awaitable[Reply | NeedsApproval], heading: str) -> Reply | NeedsApproval:
    result = await loop
    if isinstance(result, Reply) and result.text.strip():
        return dataclasses.replace(result, text=f"{heading}\n{result.text.strip()}")
    return result


async def _record_not_approved(
    tools: TurnTools,
    calls: Sequence[ToolCallRequest],
    decided: dict[str, ToolOutcome],
    step: int,
) -> None:
    """The record's approval step for held calls that did not run (the approved ones record
    their own as they run)."""
    labels = {DENIED: "denied", EXPIRED: "expired", CHANGED: "changed", STILL_RUNNING: "unknown"}
    for call in calls:
        outcome = decided.get(call.id)
        if outcome is None or call.id in tools.approved_ids:
            continue
        label = labels.get(outcome.text, "ran_before")  # executed before a restart
        await tools.record_step(call, step, CallStage.APPROVAL, label, outcome.text)


def unavailable_text(exc: ModelUnavailable) -> str:
    first_model, first_reason = exc.attempts[0] if exc.attempts else ("the model", "unknown")
    tried = " I tried the fallback too." if len(exc.attempts) > 1 else ""
    reason = f"{first_model}: {first_reason}"
    return f"The model could not be reached ({reason}).{tried} Nothing was run."
