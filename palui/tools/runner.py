"""The one place a tool call goes through: resolve, decide, record, run within a time limit.

The policy decision (DESIGN §1.4) is taken here for every call, right before it would run, and
recorded with its decision id. Every call is recorded *before* it goes out, so a crash or a /stop
mid-call leaves a record whose outcome is unknown rather than no record at all.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from palui.domain import Taint, ToolCallRequest, ToolOutcome, TurnKind, TurnScope
from palui.logs import get_logger
from palui.policy.classes import Classification
from palui.policy.destinations import refused_destination
from palui.policy.matrix import Decision, decide_call, decision_id, why
from palui.policy.taint import taints
from palui.ports import CallRecorder, Ledger, ScopedToolset
from palui.tools.catalog import ToolCatalog
from palui.tools.claims import LEDGER_REASONS, ActionClaims, repeated_outcome
from palui.tools.digest import call_digest
from palui.tools.guards import GuardRejected, Guards
from palui.tools.hooks import ToolCall, ToolResult
from palui.tools.names import split_name
from palui.tools.registry import OfferedTool, ToolOffer
from palui.tools.rules import (
    Notify,
    Stage,
    StepRecorder,
    ToolRules,
    Trail,
    post_hooks,
    pre_hooks,
    send_cap_refusal,
)

log = get_logger("palui.tools")

UNKNOWN_OUTCOME = (
    "Unknown outcome: the call did not finish in time, so the action may or may not have "
    "happened. Check before retrying, or tell the user."
)


class CallStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"  # interrupted mid-flight (/stop, crash): may or may not have happened
    REJECTED = "rejected"  # never sent: not offered, bad arguments


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[… truncated: {cut:,} more characters]"


def parse_arguments(raw: str) -> dict[str, Any]:
    """The model's JSON arguments; ValueError with a reason the model can act on."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments are not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value


class TurnTools:
    """The tool calls of one turn (implements `palui.ports.ToolRunner`)."""

    def __init__(
        self,
        offer: ToolOffer,
        recorder: CallRecorder,
        turn_id: str,
        *,
        kind: TurnKind = TurnKind.CHAT,
        catalog: ToolCatalog | None = None,
        taint: Taint | None = None,
        result_limit: int = 16_000,
        clock: Callable[[], float] = time.monotonic,
        just_approved: frozenset[str] = frozenset(),
        ledger: Ledger | None = None,
        chat_id: int = 0,
        rules: ToolRules | None = None,
        steps: StepRecorder | None = None,
        notify: Notify | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.offer = offer
        self.rules = rules or ToolRules()
        self.trail = Trail(steps, turn_id)
        self._notify = notify
        self._now = now
        # Calls that went through the hooks and guards, by call id: run() doesn't repeat them.
        self._prepared: dict[str, ToolCallRequest] = {}
        self.approved_ids: set[str] = set()  # held calls that ran after a person's approval
        self._claims = ActionClaims(ledger, chat_id, turn_id)
        self._chat_id = chat_id
        # Digests of calls approved moments ago: an idempotent write may repeat without a card.
        self.just_approved = just_approved
        self.kind = kind
        self.catalog = catalog or ToolCatalog(None, {}, {})
        self.taint = taint  # set once the turn reads untrusted content; never cleared
        self._recorder = recorder
        self._turn_id = turn_id
        self._result_limit = result_limit
        self._clock = clock
        self.in_flight: dict[int, str] = {}  # record id -> tool name

    @property
    def tainted(self) -> bool:
        return self.taint is not None

    @property
    def guards(self) -> Guards:
        return self.rules.guards

    def classification(self, name: str) -> Classification | None:
        tool = self.offer.tools.get(name)
        if tool is None:
            return None
        return self.catalog.entry(tool.toolset.id, tool.remote).classification

    def decision(self, name: str) -> Decision:
        classification = self.classification(name)
        if classification is None:
            return Decision.REFUSED
        return decide_call(classification.tool_class, self.kind, self.tainted)

    def why(self, name: str) -> str:
        classification = self.classification(name)
        tool_class = classification.tool_class if classification else None
        unsure = bool(classification and classification.unsure)
        return why(tool_class, self.kind, self.tainted, taint=self.taint, unsure=unsure)

    def decision_id(self, name: str, decision: Decision) -> str:
        classification = self.classification(name)
        assert classification is not None
        return decision_id(
            name, classification.tool_class, decision, self.catalog.kinds_digest,
            self.catalog.infer, classification.definition_hash,
        )  # fmt: skip

    def concurrent_safe(self, name: str) -> bool:
        classification = self.classification(name)
        return classification is not None and classification.tool_class == "read"

    def needs_approval(self, call: ToolCallRequest) -> bool:
        return self.decision(call.name) is Decision.ASK and not self._idempotent_retry(call)

    def _idempotent_retry(self, call: ToolCallRequest) -> bool:
        """An immediate identical retry of a just-approved write whose server marks it
        idempotent runs without a second card (DESIGN §1.4)."""
        classification = self.classification(call.name)
        tool = self.offer.tools.get(call.name)
        if not (classification and tool and classification.idempotent):
            return False
        if classification.tool_class != "write":
            return False
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError:
            return False
        digest = call_digest(call.name, arguments, classification.definition_hash)
        return digest in self.just_approved

    def _view(
        self, call: ToolCallRequest, tool: OfferedTool, arguments: dict[str, Any]
    ) -> ToolCall:
        classification = self.classification(call.name)
        return ToolCall(
            tool=call.name, connector=tool.toolset.id, arguments=dict(arguments),
            tool_class=classification.tool_class if classification else "destructive",
            sends_out=bool(classification and classification.sends_out), turn_kind=str(self.kind),
            tainted=self.tainted, chat_id=self._chat_id, turn_id=self._turn_id,
        )  # fmt: skip

    async def prepare(self, call: ToolCallRequest, step: int) -> ToolCallRequest | ToolOutcome:
        """Pre hooks, then guards (DESIGN §1.6 steps 1-2): the call with its final arguments, or
        its outcome when a hook or a guard settled it. Asked before the approval check, so a card
        shows (and its approval binds to) the arguments that will run."""
        tool = self.offer.tools.get(call.name)
        if tool is None or self.classification(call.name) is None:
            return call  # run() refuses it with its reason
        try:
            original = parse_arguments(call.arguments)
        except ValueError:
            return call
        view = self._view(call, tool, original)
        arguments, settled = await pre_hooks(self.rules, view, self.trail, call, step)
        if settled is not None:
            await self._record_rejected(call, step, settled.outcome.text, settled.status)
            return settled.outcome
        guards = self.rules.guards
        try:
            final = guards.apply(call.name, arguments, tool.remote.input_schema or {})
        except GuardRejected as exc:
            await self.trail.add(
                call, step, Stage.GUARD, "rejected", exc.message, {"arguments": arguments}
            )
            await self._record_rejected(call, step, f"guard: {exc.message}")
            return ToolOutcome(f"Error: {call.name} was not run. {exc.message}", is_error=True)
        if guards.configured(call.name) or final != arguments:
            pinned = guards.pinned(call.name)
            reason = f"pinned {', '.join(sorted(pinned))}" if pinned else "the arguments passed"
            await self.trail.add(
                call, step, Stage.GUARD, "pinned" if pinned else "passed", reason,
                {"before": arguments, "after": final},
            )  # fmt: skip
        prepared = call
        if final != original:
            prepared = ToolCallRequest(call.id, call.name, json.dumps(final, ensure_ascii=False))
        self._prepared[call.id] = prepared
        return prepared

    async def record_held(self, held: Sequence[ToolCallRequest], step: int) -> None:
        """The policy held these calls for a person's approval (a card each)."""
        for call in held:
            decision = self.decision(call.name)
            detail: dict[str, Any] = {"arguments": call.arguments}
            if self.classification(call.name) is not None:
                detail["decision_id"] = self.decision_id(call.name, decision)
            await self.trail.add(
                call, step, Stage.POLICY, str(decision), self.why(call.name), detail
            )

    async def record_step(
        self,
        call: ToolCallRequest,
        step: int,
        stage: str,
        outcome: str,
        reason: str = "",
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Record a step of a call that happened outside this class (e.g. a card's outcome)."""
        await self.trail.add(call, step, stage, outcome, reason, detail)

    async def run(self, call: ToolCallRequest, step: int) -> ToolOutcome:
        """Run a call the policy lets run; anything else is refused (fail closed). A call the
        agent loop did not `prepare` goes through the hooks and guards here."""
        if self._prepared.get(call.id) != call:
            prepared = await self.prepare(call, step)
            if isinstance(prepared, ToolOutcome):
                return prepared
            call = prepared
        decision = self.decision(call.name)
        if decision is Decision.ASK and self._idempotent_retry(call):
            decision = Decision.RUN
        tool = self.offer.tools.get(call.name)
        if tool is not None and decision is not Decision.RUN:
            await self._decided(call, step, decision)
            reason = (
                "it needs a person's approval"
                if decision is Decision.ASK
                else ("it is not available in this kind of turn")
            )
            await self._record_rejected(call, step, reason)
            return ToolOutcome(f"Error: {call.name} can't run: {reason}.", is_error=True)
        return await self._execute(call, step, tool, Decision.RUN)

    async def run_approved(
        self, call: ToolCallRequest, step: int, *, model_arguments: str | None = None
    ) -> ToolOutcome:
        """Run a call a person approved; the caller has claimed the approval (single use).

        Its arguments already went through the hooks and guards before the card was shown; the
        hooks don't run again. The guards are checked once more (cheap): if they would now change
        or refuse the call, it no longer matches what was approved, and it doesn't run.
        `model_arguments` is given when the person edited the call: the record keeps both."""
        self.approved_ids.add(call.id)
        if model_arguments is None:
            await self.trail.add(
                call, step, Stage.APPROVAL, "approved", "a person approved the card"
            )
        else:
            edit = {"before": json.loads(model_arguments), "after": json.loads(call.arguments)}
            reason = "a person edited the arguments, then approved the card"
            await self.trail.add(call, step, Stage.APPROVAL, "approved", reason, edit)
        tool = self.offer.tools.get(call.name)
        if tool is not None:
            try:
                arguments = parse_arguments(call.arguments)
                final = self.rules.guards.apply(
                    call.name, arguments, tool.remote.input_schema or {}
                )
            except (ValueError, GuardRejected) as exc:
                reason = exc.message if isinstance(exc, GuardRejected) else str(exc)
                await self.trail.add(call, step, Stage.GUARD, "rejected", reason)
                await self._record_rejected(call, step, f"guard: {reason}")
                return ToolOutcome(f"Error: {call.name} was not run. {reason}", is_error=True)
            if final != arguments:
                reason = "the operator's pinned values changed after the card was approved"
                await self.trail.add(call, step, Stage.GUARD, "rejected", reason)
                await self._record_rejected(call, step, f"guard: {reason}")
                return ToolOutcome(f"Error: {call.name} was not run: {reason}.", is_error=True)
        return await self._execute(call, step, tool, None)

    async def _decided(self, call: ToolCallRequest, step: int, decision: Decision) -> None:
        name = call.name
        classification = self.classification(name)
        if classification is None:
            return
        decision_id = self.decision_id(name, decision)
        await self._recorder.decision_recorded(
            self._turn_id, step, name, classification.tool_class, decision, decision_id,
            self.why(name),
        )  # fmt: skip
        await self.trail.add(
            call, step, Stage.POLICY, str(decision), self.why(name),
            {"decision_id": decision_id, "class": classification.tool_class},
        )  # fmt: skip

    async def _execute(
        self, call: ToolCallRequest, step: int, tool: OfferedTool | None, decision: Decision | None
    ) -> ToolOutcome:
        if tool is None:
            await self.trail.add(call, step, Stage.POLICY, "refused", "not offered in this turn")
            await self._record_rejected(call, step, "not offered")
            return ToolOutcome(
                f"Error: there is no tool named {call.name!r} in this turn. "
                "Use one of the tools you were given, or answer without a tool.",
                is_error=True,
            )
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError as exc:
            await self.trail.add(call, step, Stage.GUARD, "rejected", str(exc))
            await self._record_rejected(call, step, str(exc))
            return ToolOutcome(f"Error: {exc}. Call {call.name} again with a JSON object.", True)
        if decision is not None:
            await self._decided(call, step, decision)
        classification = self.classification(call.name)
        sends_out = bool(classification and classification.sends_out)
        if classification is not None and not classification.sends_out:
            refusal = refused_destination(tool.remote.input_schema or {}, arguments)
            if refusal is not None:
                await self.trail.add(call, step, Stage.DESTINATION, "refused", refusal)
                await self._record_rejected(call, step, f"destination guard: {refusal}")
                return ToolOutcome(f"Error: {call.name} was refused: {refusal}.", is_error=True)
        if sends_out:
            refusal = await send_cap_refusal(
                self.rules, self.trail.recorder, self._notify, self._chat_id, self._now()
            )
            if refusal is not None:
                await self.trail.add(call, step, Stage.SEND_CAP, "refused", refusal)
                await self._record_rejected(call, step, f"send cap: {refusal}")
                return ToolOutcome(f"Error: {call.name} was not run: {refusal}.", is_error=True)
        tool_class = classification.tool_class if classification else None
        action = await self._claims.claim(call.name, tool_class, arguments)
        if action is not None:
            await self.trail.add(
                call, step, Stage.LEDGER, "claimed" if action.state == "new" else action.state,
                LEDGER_REASONS.get(action.state, ""), {"action_id": action.action_id},
            )  # fmt: skip
        if action is not None and action.state != "new":
            repeated = await self._repeat(call, step, action)
            # The recorded result is the raw one: the post hooks see it too (e.g. to redact).
            return await self._post(call, step, tool, arguments, repeated, f"dup_{action.state}")
        record = await self._recorder.call_started(self._turn_id, step, call.name, call.arguments)
        self.in_flight[record] = call.name
        # Recorded before the call goes out: the send cap counts it even if we crash mid-call.
        execution = await self.trail.add(
            call, step, Stage.EXECUTE, "running", "", {"arguments": arguments},
            sends_out=sends_out,
        )  # fmt: skip
        started = self._clock()
        status, outcome = CallStatus.UNKNOWN, ToolOutcome(UNKNOWN_OUTCOME, is_error=True)
        try:
            outcome = await self._call_toolset(tool, arguments)
            status = CallStatus.ERROR if outcome.is_error else CallStatus.OK
        except TimeoutError:
            status = CallStatus.TIMEOUT
            log.warning("tool_timeout", tool=call.name)
        except Exception as exc:
            # A connector should never raise; if one does, the turn goes on without it.
            log.exception("tool_crashed", tool=call.name)
            status = CallStatus.ERROR
            outcome = ToolOutcome(f"Error: the tool failed ({type(exc).__name__}).", True)
        finally:
            # Any result from an untrusted connector (an error or a write's confirmation too)
            # taints the turn; so does an interrupted one, whose content may have arrived.
            if self.taint is None and taints(tool.toolset.trust):
                connector = (split_name(call.name) or (tool.toolset.id, ""))[0]
                self.taint = Taint(connector, call.name)
            # Also on cancellation (/stop): the record must say the outcome is unknown.
            del self.in_flight[record]
            text = truncate(outcome.text, self._result_limit)
            took = self._clock() - started
            await asyncio.shield(self._recorder.call_ended(record, status, text, took))
            reason = "" if status is CallStatus.OK else truncate(outcome.text, 500)
            await asyncio.shield(self.trail.ended(execution, str(status), reason, took))
            if action is not None and action.action_id is not None:
                await asyncio.shield(self._claims.settle(action.action_id, str(status), text))
        log.info("tool_called", tool=call.name, status=status, step=step)
        final = ToolOutcome(truncate(outcome.text, self._result_limit), outcome.is_error)
        return await self._post(call, step, tool, arguments, final, str(status))

    async def _post(
        self,
        call: ToolCallRequest,
        step: int,
        tool: OfferedTool,
        arguments: dict[str, Any],
        outcome: ToolOutcome,
        status: str,
    ) -> ToolOutcome:
        """The post hooks (DESIGN §1.6 step 6), on success and on failure."""
        if not self.rules.post_hooks:
            return outcome
        result = ToolResult(outcome.text, outcome.is_error, status)
        view = self._view(call, tool, arguments)
        return await post_hooks(self.rules, view, result, self.trail, call, step)

    async def _call_toolset(self, tool: OfferedTool, arguments: dict[str, Any]) -> ToolOutcome:
        if isinstance(tool.toolset, ScopedToolset):  # the built-ins act on this turn's chat
            scope = TurnScope(self._turn_id, self._chat_id, self.kind, self.tainted)
            return await tool.toolset.call_scoped(scope, tool.remote.name, arguments)
        return await tool.toolset.call(tool.remote.name, arguments)

    async def _repeat(self, call: ToolCallRequest, step: int, action: Any) -> ToolOutcome:
        """An identical call within the window: nothing goes out again."""
        found = repeated_outcome(action)
        outcome = ToolOutcome(truncate(found.text, self._result_limit), found.is_error)
        record = await self._recorder.call_started(self._turn_id, step, call.name, call.arguments)
        await self._recorder.call_ended(record, f"dup_{action.state}"[:16], outcome.text, 0.0)
        log.info("tool_not_repeated", tool=call.name, ledger=action.state)
        return outcome

    async def _record_rejected(
        self, call: ToolCallRequest, step: int, reason: str, status: str = CallStatus.REJECTED
    ) -> None:
        name = call.name[:128]  # a name the model invented can be anything
        record = await self._recorder.call_started(self._turn_id, step, name, call.arguments)
        await self._recorder.call_ended(record, status, reason, 0.0)
