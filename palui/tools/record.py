"""A tool call's record (DESIGN §1.6): the one writer of what happened to each call.

One record per call (turn, model step, call id): its class, the policy's decision with its id
and reason, the arguments that ran (and the model's, if a person edited them), its status, its
result, its timing, and the story stage by stage (hooks, guards, policy, approval, destination
guard, send cap, ledger, execution, post hooks) that `palui runs show` explains. `CallRunner`
tells it each stage as the call moves on; nothing else writes a call's record.

A call that changes the world (or sends out) is recorded `running` before it goes out, so a
crash or a /stop mid-call leaves an unknown outcome behind rather than no record at all
(`palui.db.recovery` settles it). A read-only call is written once, when it ends: its policy
decision and its start wait in memory until then (a crash mid-read leaves no record of it; it
changed nothing, and the turn runs again). The bookkeeping the turn owes (`palui.db.riders`)
waits for the turn's end, one INSERT for all its model calls; only a re-run's records carry it
(so a crash loop cannot spend past the token cap). A read-tool call costs one transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from palui.db.riders import Riders
from palui.domain import CallChange, CallStage, CallStatus, StageEntry, ToolCallRequest
from palui.domain.turn_record import CallKey
from palui.observe import Metrics, event

# A card's outcome for a held call that never ran (not "unknown": that one is still running
# elsewhere, nor "ran_before": it ran before a restart).
NOT_APPROVED = frozenset({"denied", "expired", "changed"})


class CallStore(Protocol):
    """Where call records are kept (implemented by `palui.db.calls.CallRecordRepo`)."""

    async def save(
        self,
        key: CallKey,
        change: CallChange,
        *,
        earlier: Sequence[CallChange] = (),
        row_id: int | None = None,
        fresh: bool = False,
        riders: Riders | None = None,
    ) -> int | None: ...

    async def sends_since(self, since: datetime, exempt: Collection[str] = ()) -> int: ...

    async def first_cap_notice(self, chat_id: int, day: str) -> bool: ...


@dataclass(slots=True)
class _Kept:
    """What this drive knows of one call's record: changes not written yet, and the row."""

    pending: list[CallChange] = field(default_factory=list)
    saved: bool = False
    row_id: int | None = None


class CallRecord:
    """The records of one turn's calls; records nothing without a store (unit tests).

    `resumed`: the turn ran before (a paused turn driven on), so a call's record may exist
    already and is looked up; otherwise a call's first write is a plain INSERT."""

    def __init__(
        self,
        store: CallStore | None,
        turn_id: str,
        chat_id: int,
        *,
        resumed: bool = False,
        riders: Riders | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self._metrics = metrics
        self._turn_id = turn_id
        self._chat_id = chat_id
        self._resumed = resumed
        self._riders = riders
        self._calls: dict[tuple[int, str], _Kept] = {}

    async def stage(
        self,
        call: ToolCallRequest,
        step: int,
        stage: CallStage,
        outcome: str,
        reason: str = "",
        detail: dict[str, Any] | None = None,
    ) -> None:
        """A stage the call went through, with its outcome and why."""
        status = None
        if stage is CallStage.APPROVAL and outcome in NOT_APPROVED:
            status = CallStatus.NOT_APPROVED
        entry = StageEntry(stage, outcome, reason, detail or {})
        await self._save(call, step, CallChange(call.name, entry, status=status))

    async def decided(
        self,
        call: ToolCallRequest,
        step: int,
        tool_class: str,
        decision: str,
        decision_id: str,
        why: str,
        *,
        held: bool = False,
        basis: Mapping[str, Any] | None = None,
    ) -> None:
        """The policy's decision (held: the call waits for a person's approval card). `basis`:
        what it rested on (`TurnPolicy.basis`), kept with the stage for `palui runs explain`."""
        if self._metrics is not None:
            self._metrics.tool_called(tool_class, decision)
        event("palui.decision", decision=decision, tool_class=tool_class, held=held)
        detail: dict[str, Any] = {"decision_id": decision_id, "class": tool_class}
        if held:
            detail = {"arguments": call.arguments, "decision_id": decision_id}
        detail.update(basis or {})
        entry = StageEntry(CallStage.POLICY, decision, why, detail)
        source = str(basis["class_source"]) if basis and basis.get("class_source") else None
        # A call that runs: written with its start (a world-changing one) or its end (a read).
        await self._save(
            call,
            step,
            CallChange(
                call.name,
                entry,
                status=CallStatus.HELD if held else None,
                tool_class=tool_class,
                class_source=source,
                decision=decision,
                decision_id=decision_id,
                reason=why,
            ),
            defer=not held,
        )

    async def approved(
        self,
        call: ToolCallRequest,
        step: int,
        reason: str,
        detail: dict[str, Any] | None = None,
        *,
        model_arguments: str | None = None,
    ) -> None:
        entry = StageEntry(CallStage.APPROVAL, "approved", reason, detail or {})
        change = CallChange(call.name, entry, model_arguments=model_arguments)
        await self._save(call, step, change)

    async def settled(
        self, call: ToolCallRequest, step: int, status: CallStatus, result: str
    ) -> None:
        """The call ended without going out (refused, rejected, settled by a hook or the
        ledger); `result` says why."""
        change = CallChange(call.name, status=status, result=result, duration_s=0.0)
        await self._save(call, step, change)

    async def started(
        self,
        call: ToolCallRequest,
        step: int,
        arguments: dict[str, Any],
        *,
        tool_class: str | None,
        sends_out: bool,
        now: bool = False,
    ) -> None:
        """Written before a world-changing call goes out: the send cap counts it even if we
        crash mid-call, and recovery settles it as unknown. A read's start is written with its
        end, unless `now` (a delegation, whose sub-turn's calls are recorded meanwhile)."""
        entry = StageEntry(CallStage.EXECUTE, str(CallStatus.RUNNING), "", {"arguments": arguments})
        changes_the_world = tool_class != "read" or sends_out  # None: destructive
        # A re-run's token usage is not left to a read's end (a crash loop would evade the cap).
        owed = self._riders is not None and self._riders.eager and bool(self._riders.usage)
        await self._save(
            call,
            step,
            CallChange(
                call.name,
                entry,
                status=CallStatus.RUNNING,
                tool_class=tool_class,
                sends_out=sends_out,
                went_out=True,
            ),
            defer=not (changes_the_world or owed or now),
        )

    async def ended(
        self,
        call: ToolCallRequest,
        step: int,
        status: CallStatus,
        result: str,
        reason: str,
        duration_s: float,
    ) -> None:
        entry = StageEntry(CallStage.EXECUTE, str(status), reason, duration_s=duration_s)
        await self._save(
            call,
            step,
            CallChange(
                call.name,
                entry,
                settles=True,
                status=status,
                result=result,
                duration_s=duration_s,
            ),
        )

    async def ledger(
        self, call: ToolCallRequest, step: int, claimed: str, reason: str, action_id: int | None
    ) -> None:
        """The ledger's claim: written with the call's start (or its settling, a repeat)."""
        entry = StageEntry(CallStage.LEDGER, claimed, reason, {"action_id": action_id})
        await self._save(call, step, CallChange(call.name, entry), defer=True)

    async def _save(
        self, call: ToolCallRequest, step: int, change: CallChange, *, defer: bool = False
    ) -> None:
        if self.store is None:
            return
        # The arguments as they stand at this stage (in the end, what ran), and when.
        change = dataclasses.replace(change, arguments=call.arguments, at=datetime.now(UTC))
        kept = self._calls.setdefault((step, call.id), _Kept())
        if defer:
            kept.pending.append(change)
            return
        # The usage waits for the turn's end (one INSERT for every model call) unless the turn
        # is a re-run, whose usage is written as soon as it can be.
        riders = self._riders if self._riders is not None and self._riders.eager else None
        key = CallKey(self._turn_id, self._chat_id, step, call.id)
        row_id = await self.store.save(
            key,
            change,
            earlier=tuple(kept.pending),
            row_id=kept.row_id,
            fresh=not (kept.saved or self._resumed),
            riders=riders,
        )
        kept.pending.clear()
        kept.saved = True
        kept.row_id = row_id
