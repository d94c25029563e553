"""The one place a tool call goes through: resolve, decide, record, run within a time limit.

The policy decision (DESIGN §1.4) is taken here for every call, right before it would run, and
recorded with its decision id. Every call is recorded *before* it goes out, so a crash or a /stop
mid-call leaves a record whose outcome is unknown rather than no record at all.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from palui.domain import ToolCallRequest, ToolOutcome, TurnKind
from palui.logs import get_logger
from palui.policy.classes import Classification
from palui.policy.destinations import refused_destination
from palui.policy.matrix import Decision, decide_call, decision_id, why
from palui.policy.taint import TaintSource, taints
from palui.ports import CallRecorder, Ledger
from palui.tools.catalog import ToolCatalog
from palui.tools.digest import call_digest, canonical
from palui.tools.names import split_name
from palui.tools.registry import OfferedTool, ToolOffer

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
        taint: TaintSource | None = None,
        result_limit: int = 16_000,
        clock: Callable[[], float] = time.monotonic,
        just_approved: frozenset[str] = frozenset(),
        ledger: Ledger | None = None,
        chat_id: int = 0,
    ) -> None:
        self.offer = offer
        self._ledger = ledger
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

    async def run(self, call: ToolCallRequest, step: int) -> ToolOutcome:
        """Run a call the policy lets run; anything else is refused (fail closed)."""
        decision = self.decision(call.name)
        if decision is Decision.ASK and self._idempotent_retry(call):
            decision = Decision.RUN
        tool = self.offer.tools.get(call.name)
        if tool is not None and decision is not Decision.RUN:
            await self._decided(call.name, step, decision)
            reason = (
                "it needs a person's approval"
                if decision is Decision.ASK
                else ("it is not available in this kind of turn")
            )
            await self._record_rejected(call, step, reason)
            return ToolOutcome(f"Error: {call.name} can't run: {reason}.", is_error=True)
        return await self._execute(call, step, tool, Decision.RUN)

    async def run_approved(self, call: ToolCallRequest, step: int) -> ToolOutcome:
        """Run a call a person approved; the caller has claimed the approval (single use)."""
        return await self._execute(call, step, self.offer.tools.get(call.name), None)

    async def _decided(self, name: str, step: int, decision: Decision) -> None:
        classification = self.classification(name)
        if classification is None:
            return
        await self._recorder.decision_recorded(
            self._turn_id, step, name, classification.tool_class, decision,
            self.decision_id(name, decision), self.why(name),
        )  # fmt: skip

    async def _execute(
        self, call: ToolCallRequest, step: int, tool: OfferedTool | None, decision: Decision | None
    ) -> ToolOutcome:
        if tool is None:
            await self._record_rejected(call, step, "not offered")
            return ToolOutcome(
                f"Error: there is no tool named {call.name!r} in this turn. "
                "Use one of the tools you were given, or answer without a tool.",
                is_error=True,
            )
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError as exc:
            await self._record_rejected(call, step, str(exc))
            return ToolOutcome(f"Error: {exc}. Call {call.name} again with a JSON object.", True)
        if decision is not None:
            await self._decided(call.name, step, decision)
        classification = self.classification(call.name)
        if classification is not None and not classification.sends_out:
            refusal = refused_destination(tool.remote.input_schema or {}, arguments)
            if refusal is not None:
                await self._record_rejected(call, step, f"destination guard: {refusal}")
                return ToolOutcome(f"Error: {call.name} was refused: {refusal}.", is_error=True)
        action = await self._claim_action(call, arguments)
        if action is not None and action.state != "new":
            return await self._repeat(call, step, action)
        record = await self._recorder.call_started(self._turn_id, step, call.name, call.arguments)
        self.in_flight[record] = call.name
        started = self._clock()
        status, outcome = CallStatus.UNKNOWN, ToolOutcome(UNKNOWN_OUTCOME, is_error=True)
        try:
            outcome = await tool.toolset.call(tool.remote.name, arguments)
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
                self.taint = TaintSource(connector, call.name)
            # Also on cancellation (/stop): the record must say the outcome is unknown.
            del self.in_flight[record]
            text = truncate(outcome.text, self._result_limit)
            await asyncio.shield(
                self._recorder.call_ended(record, status, text, self._clock() - started)
            )
            if action is not None and action.action_id is not None:
                state = {CallStatus.OK: "completed", CallStatus.ERROR: "failed"}.get(
                    status, "unknown"
                )
                await asyncio.shield(self._ledger_settle(action.action_id, state, text))
        log.info("tool_called", tool=call.name, status=status, step=step)
        return ToolOutcome(truncate(outcome.text, self._result_limit), outcome.is_error)

    async def _claim_action(self, call: ToolCallRequest, arguments: dict[str, Any]) -> Any:
        """Claim a world-changing call in the ledger; reads are never ledgered."""
        classification = self.classification(call.name)
        if self._ledger is None or classification is None or classification.tool_class == "read":
            return None
        key = call_digest(f"{self._chat_id}:{call.name}", arguments, "")
        return await self._ledger.claim(
            key, self._chat_id, call.name, canonical(arguments), self._turn_id
        )

    async def _ledger_settle(self, action_id: int, state: str, result: str) -> None:
        assert self._ledger is not None
        await self._ledger.settle(action_id, state, result)

    async def _repeat(self, call: ToolCallRequest, step: int, action: Any) -> ToolOutcome:
        """An identical call within the window: nothing goes out again."""
        if action.state == "completed":
            text = (
                "Already done: this exact call ran a short while ago in this chat, so it was "
                f"not sent again. Its result was:\n{action.result or ''}"
            )
            outcome = ToolOutcome(truncate(text, self._result_limit))
        elif action.state == "in_progress":
            outcome = ToolOutcome(
                "This exact call is already running; it was not started a second time.", True
            )
        else:
            outcome = ToolOutcome(
                "Unknown outcome: this exact call was interrupted earlier, so it may or may not "
                "have happened. It was not sent again; check before retrying, or tell the user.",
                True,
            )
        record = await self._recorder.call_started(self._turn_id, step, call.name, call.arguments)
        await self._recorder.call_ended(record, f"dup_{action.state}"[:16], outcome.text, 0.0)
        log.info("tool_not_repeated", tool=call.name, ledger=action.state)
        return outcome

    async def _record_rejected(self, call: ToolCallRequest, step: int, reason: str) -> None:
        name = call.name[:128]  # a name the model invented can be anything
        record = await self._recorder.call_started(self._turn_id, step, name, call.arguments)
        await self._recorder.call_ended(record, CallStatus.REJECTED, reason, 0.0)
