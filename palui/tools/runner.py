"""The one place a tool call goes through: resolve, decide, record, run within a time limit.

The policy decision (DESIGN §1.4) is taken here for every call, right before it would run, and
recorded with its decision id. Every call that changes the world is recorded *before* it goes
out, so a crash or a /stop mid-call leaves a record whose outcome is unknown rather than no record
at all; a read-only call is recorded once, when it ends (`palui.tools.record`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import count
from typing import Any

from palui.domain import (
    ActionState,
    CallStage,
    CallStatus,
    NestedCall,
    OfferEvent,
    Taint,
    ToolCallRequest,
    ToolOutcome,
    ToolSpec,
    TurnScope,
)
from palui.logs import get_logger
from palui.policy.classes import Classification
from palui.policy.matrix import Decision
from palui.ports import ScopedToolset
from palui.tools import preflight, provenance
from palui.tools import rules as ops
from palui.tools.arguments import parse_arguments
from palui.tools.claims import LEDGER_REASONS, ActionClaims, repeated_outcome
from palui.tools.context import CallContext
from palui.tools.hooks import ToolCall, ToolResult
from palui.tools.record import CallRecord
from palui.tools.registry import OfferedTool, ToolOffer
from palui.tools.results import UNKNOWN_OUTCOME, truncate
from palui.tools.turn_policy import TurnPolicy
from palui.tools.unoffered import not_offered

__all__ = ["CallContext", "CallRunner", "parse_arguments", "truncate"]

log = get_logger("palui.tools")


class CallRunner:
    """The tool calls of one turn (implements `palui.ports.ToolRunner`).

    What a call needs is the turn's frozen `CallContext`; what changes as the turn goes (the
    offer the search grows, the taint results add, the calls in flight and gone out, the calls
    a form completes) is held here and read only through the methods below."""

    def __init__(self, context: CallContext, offer: ToolOffer) -> None:
        self._context = context
        self._offer = offer
        ports, policy = context.ports, context.policy
        turn_id, chat_id = context.turn_id, context.chat_id
        self._record = CallRecord(
            ports.store,
            turn_id,
            chat_id,
            resumed=context.resumed,
            riders=ports.riders,
            metrics=ports.metrics,
        )
        self._claims = ActionClaims(ports.ledger, chat_id, turn_id)
        self._policy = TurnPolicy(
            offer, policy.catalog, context.kind, policy.just_approved, policy.named
        )
        self._taint = context.taint  # set once the turn reads untrusted content; never cleared
        # Calls that went through the hooks and guards, by call id: run() doesn't repeat them.
        self._prepared: dict[str, ToolCallRequest] = {}
        self._in_flight: dict[int, str] = {}  # calls going out now: a number -> the tool's name
        self._went_out: list[tuple[str, bool]] = []  # (name, changes the world) in this drive
        # Calls lacking a required argument the person fills in on a form: held for a card.
        self._form_calls: dict[str, list[str]] = {}
        self._numbers = count(1)

    @property
    def context(self) -> CallContext:
        return self._context

    @property
    def record(self) -> CallRecord:
        """Writes the turn's call records (`palui runs show`): steps taken outside the runner
        (a card's outcome, a delegation) are written through it too."""
        return self._record

    @property
    def policy(self) -> TurnPolicy:
        """The policy applied to this turn's offer (`palui.tools.turn_policy`)."""
        return self._policy

    @property
    def taint(self) -> Taint | None:
        return self._taint

    @property
    def offered(self) -> Mapping[str, OfferedTool]:
        """The tools offered now (those the model found with `palui__find_tools` too)."""
        return self._offer.tools

    @property
    def specs(self) -> list[ToolSpec]:
        return self._offer.specs

    def offer_events(self) -> list[OfferEvent]:
        """What changed in the offer since last asked (the turn's next write records it)."""
        return self._offer.drain()

    def in_flight(self) -> list[str]:
        """The tools of the calls going out now."""
        return list(self._in_flight.values())

    def changed_the_world(self) -> list[str]:
        """The world-changing calls that went out in this drive, each name once, in order."""
        return list(dict.fromkeys(name for name, changes in self._went_out if changes))

    def awaits_form(self, call_id: str) -> bool:
        """A required argument of this call is missing: the person fills it in on its card."""
        return call_id in self._form_calls

    @property
    def tainted(self) -> bool:
        return self.taint is not None

    def classification(self, name: str) -> Classification | None:
        return self.policy.classification(name)

    def decision(self, call: ToolCallRequest) -> Decision:
        decision = self.policy.decision(call, self.taint)
        form = decision is Decision.RUN and call.id in self._form_calls  # a card fills it in
        return Decision.ASK if form else decision

    def why(self, call: ToolCallRequest) -> str:
        missing = self._form_calls.get(call.id)
        if missing is not None:
            names = ", ".join(repr(name) for name in missing)
            return f"{self.policy.why(call, self.taint)}; {names} missing: you fill it in"
        return self.policy.why(call, self.taint)

    def decision_id(self, name: str, decision: Decision) -> str:
        return self.policy.decision_id(name, decision)

    def concurrent_safe(self, name: str) -> bool:
        classification = self.classification(name)
        return classification is not None and classification.tool_class == "read"

    def needs_approval(self, call: ToolCallRequest) -> bool:
        return self.decision(call) is Decision.ASK and not self.policy.idempotent_retry(call)

    def view(self, call: ToolCallRequest, tool: OfferedTool, arguments: dict[str, Any]) -> ToolCall:
        classification, turn = self.classification(call.name), self.context
        return ToolCall(
            tool=call.name,
            connector=tool.toolset.id,
            arguments=dict(arguments),
            tool_class=classification.tool_class if classification else "destructive",
            sends_out=bool(classification and classification.sends_out),
            turn_kind=str(turn.kind),
            tainted=self.tainted,
            chat_id=turn.chat_id,
            turn_id=turn.turn_id,
        )

    async def prepare(self, call: ToolCallRequest, step: int) -> ToolCallRequest | ToolOutcome:
        """Pre hooks, then guards (DESIGN §1.6 steps 1-2): the call with its final arguments, or
        its outcome when a hook or a guard settled it (`palui.tools.preflight`)."""
        prepared, missing = await preflight.prepare(self, call, step)
        if missing is not None:
            self._form_calls[call.id] = missing
        if isinstance(prepared, ToolCallRequest):
            self._prepared[call.id] = prepared
        return prepared

    async def record_held(self, held: Sequence[ToolCallRequest], step: int) -> None:
        """The policy held these calls for a person's approval (a card each)."""
        for call in held:
            decision = self.decision(call)
            if self.classification(call.name) is None:
                detail = {"arguments": call.arguments}
                await self.record.stage(
                    call, step, CallStage.POLICY, str(decision), self.why(call), detail
                )
                continue
            await self._decided(call, step, decision, held=True)

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
        await self.record.stage(call, step, CallStage(stage), outcome, reason, detail)

    async def run(self, call: ToolCallRequest, step: int) -> ToolOutcome:
        """Run a call the policy lets run; anything else is refused (fail closed). A call the
        agent loop did not `prepare` goes through the hooks and guards here."""
        if self._prepared.get(call.id) != call:
            prepared = await self.prepare(call, step)
            if isinstance(prepared, ToolOutcome):
                return prepared
            call = prepared
        decision = self.decision(call)
        if decision is Decision.ASK and self.policy.idempotent_retry(call):
            decision = Decision.RUN
        tool = self._offer.tools.get(call.name)
        if tool is not None and decision is not Decision.RUN:
            await self._decided(call, step, decision)
            reason = (
                "it needs a person's approval"
                if decision is Decision.ASK
                else ("it is not available in this kind of turn")
            )
            await self.rejected(call, step, reason)
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
        if model_arguments is None:
            await self.record.approved(call, step, "a person approved the card")
        else:
            edit = {"before": json.loads(model_arguments), "after": json.loads(call.arguments)}
            reason = "a person edited the arguments, then approved the card"
            await self.record.approved(call, step, reason, edit, model_arguments=model_arguments)
        tool = self._offer.tools.get(call.name)
        rules = self.context.policy.rules
        checked = await ops.guards_again(rules, self.record, call, step, tool) if tool else None
        return checked or await self._execute(call, step, tool, None)

    async def _decided(
        self, call: ToolCallRequest, step: int, decision: Decision, *, held: bool = False
    ) -> None:
        classification = self.classification(call.name)
        if classification is None:
            return
        decided = str(decision), self.decision_id(call.name, decision), self.why(call)
        basis = self.policy.basis(call, self.taint)
        await self.record.decided(
            call, step, classification.tool_class, *decided, held=held, basis=basis
        )

    async def _execute(
        self, call: ToolCallRequest, step: int, tool: OfferedTool | None, decision: Decision | None
    ) -> ToolOutcome:
        if tool is None:
            return await not_offered(self._offer, self.record, call, step)
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError as exc:
            await self.record.stage(call, step, CallStage.GUARD, "rejected", str(exc))
            await self.rejected(call, step, str(exc))
            return ToolOutcome(f"Error: {exc}. Call {call.name} again with a JSON object.", True)
        if decision is not None:
            await self._decided(call, step, decision)
        refusal = await self._refusal(call, step, tool, arguments)
        if refusal is not None:
            return refusal
        classification = self.classification(call.name)
        tool_class = classification.tool_class if classification else None
        action = await self._claims.claim(call.name, tool_class, arguments)
        if action is not None:
            claimed = "claimed" if action.state == ActionState.NEW else action.state
            reason = LEDGER_REASONS.get(action.state, "")
            await self.record.ledger(call, step, claimed, reason, action.action_id)
        if action is not None and action.state != ActionState.NEW:
            repeated = await self._repeat(call, step, tool, action)
            # The recorded result is the raw one: the post hooks see it too (e.g. to redact).
            return await self._post(call, step, tool, arguments, repeated, f"dup_{action.state}")
        self._offer.mark_used(call.name)
        number = next(self._numbers)
        self._in_flight[number] = call.name
        sends_out = bool(classification and classification.sends_out)
        await self.record.started(call, step, arguments, tool_class=tool_class, sends_out=sends_out)
        self._went_out.append((call.name, tool_class != "read" or sends_out))  # None: destructive
        started = self.context.ports.clock()
        status, outcome = CallStatus.UNKNOWN, ToolOutcome(UNKNOWN_OUTCOME, is_error=True)
        try:
            outcome = await self._call_toolset(call, step, tool, arguments)
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
            self._taint = self._taint or provenance.result_taint(call.name, tool, outcome)
            # Also on cancellation (/stop): the record must say the outcome is unknown.
            del self._in_flight[number]
            text = truncate(outcome.text, self.context.result_limit)
            took = self.context.ports.clock() - started
            reason = "" if status is CallStatus.OK else truncate(outcome.text, 500)
            await asyncio.shield(self.record.ended(call, step, status, text, reason, took))
            if action is not None and action.action_id is not None:
                await asyncio.shield(self._claims.settle(action.action_id, str(status), text))
        log.info("tool_called", tool=call.name, status=status, step=step)
        final = ToolOutcome(truncate(outcome.text, self.context.result_limit), outcome.is_error)
        return await self._post(call, step, tool, arguments, final, str(status))

    async def _refusal(
        self, call: ToolCallRequest, step: int, tool: OfferedTool, arguments: dict[str, Any]
    ) -> ToolOutcome | None:
        """The destination guard and the daily send cap (DESIGN §1.6): why it can't go out."""
        return await ops.refuse_outgoing(
            self.context.policy.rules,
            self.record,
            self.context.ports.notify,
            self.context.chat_id,
            self.context.ports.now(),
            call,
            step,
            self.classification(call.name),
            tool.remote.input_schema or {},
            arguments,
        )

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
        if not self.context.policy.rules.post_hooks:
            return outcome
        result = ToolResult(outcome.text, outcome.is_error, status)
        view = self.view(call, tool, arguments)
        rules = self.context.policy.rules
        return await ops.post_hooks(rules, view, result, self.record, call, step)

    async def _call_toolset(
        self, call: ToolCallRequest, step: int, tool: OfferedTool, arguments: dict[str, Any]
    ) -> ToolOutcome:
        if isinstance(tool.toolset, ScopedToolset):  # the built-ins act on this turn's chat
            nested = self._nested(call, step)
            turn = self.context
            scope = TurnScope(
                turn.turn_id, turn.chat_id, turn.kind, self.tainted, self.taint, nested=nested
            )
            return await tool.toolset.call_scoped(scope, tool.remote.name, arguments)
        return await provenance.call(tool, arguments, self.taint)  # memory keeps its origin

    def _nested(self, parent: ToolCallRequest, step: int) -> NestedCall:
        """Calls a running tool makes of other tools (palui__run_code's bridge) go where the
        model's go: hooks, guards, the policy, duplicate protection, a record each (its id is
        the parent's, numbered)."""
        numbers = count(1)

        async def nested(name: str, arguments: dict[str, Any]) -> ToolOutcome:
            text = json.dumps(arguments, ensure_ascii=False)
            return await self.run(ToolCallRequest(f"{parent.id}/{next(numbers)}", name, text), step)

        return nested

    async def _repeat(
        self, call: ToolCallRequest, step: int, tool: OfferedTool, action: Any
    ) -> ToolOutcome:
        """An identical call within the window: nothing goes out again; its result taints."""
        found = provenance.repeated(tool, repeated_outcome(action))
        outcome = replace(found, text=truncate(found.text, self.context.result_limit))
        self._taint = self._taint or provenance.result_taint(call.name, tool, outcome)
        await self.record.settled(call, step, CallStatus(f"dup_{action.state}"), outcome.text)
        log.info("tool_not_repeated", tool=call.name, ledger=action.state)
        return outcome

    async def rejected(self, call: ToolCallRequest, step: int, reason: str) -> None:
        await self.record.settled(call, step, CallStatus.REJECTED, reason)
