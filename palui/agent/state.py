"""What one turn of the agent loop is given and what it keeps: its dependencies, its state while
it runs, and a paused turn's snapshot (a sub-turn's too, inside its parent's)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from palui.domain import Completion, Message, ToolCallRequest, ToolOutcome, ToolSpec, Usage
from palui.ports import ChatModel, DeltaHandler, ToolRunner

UsageSink = Callable[[Completion, float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class TurnDeps:
    model: ChatModel
    record_usage: UsageSink
    max_steps: int = 12
    timeout_s: float = 120
    tools: Sequence[ToolSpec] = ()
    # The tools offered at each step, when the offer can grow within the turn (a search for
    # tools made more callable); else `tools` at every step.
    offered: Callable[[], Sequence[ToolSpec]] | None = None
    runner: ToolRunner | None = None
    on_delta: DeltaHandler | None = None
    clock: Callable[[], float] = time.monotonic
    # The delegation tool's name when it is offered (`palui.agent.subturn`); None in a sub-turn,
    # which cannot delegate (depth 1).
    delegate: str | None = None


@dataclass(slots=True)
class TurnState:
    """What changes while a turn runs."""

    messages: list[Message]
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    partial: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0  # run time before the last pause
    drive_started: float = 0.0  # the clock when this drive began (not stored: per drive)

    def add_usage(self, usage: Usage) -> None:
        self.usage = Usage(
            self.usage.prompt_tokens + usage.prompt_tokens,
            self.usage.completion_tokens + usage.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class TurnSnapshot:
    """A paused turn: its conversation up to the step whose calls wait, and what already ran."""

    messages: tuple[Message, ...]
    steps: int
    usage: Usage
    partial: tuple[str, ...]
    elapsed_s: float
    step_calls: tuple[ToolCallRequest, ...]  # every call of the paused step, in order
    outcomes: dict[str, ToolOutcome]  # by call id: the calls that did not wait
    sub: SubTurn | None = None  # a sub-turn of this step that waits for a person

    @classmethod
    def of(
        cls,
        state: TurnState,
        calls: Sequence[ToolCallRequest],
        outcomes: dict[str, ToolOutcome],
        sub: SubTurn | None = None,
    ) -> TurnSnapshot:
        return cls(
            tuple(state.messages),
            state.steps,
            state.usage,
            tuple(state.partial),
            state.elapsed_s,
            tuple(calls),
            dict(outcomes),
            sub,
        )

    def waiting_ids(self) -> set[str]:
        """The ids of the calls that wait for a person: this step's, and a waiting sub-turn's
        under the ids their approvals have (`<delegation call id>/<its own>`)."""
        ids = {call.id for call in self.step_calls} - set(self.outcomes)
        if self.sub is not None:
            ids.discard(self.sub.call.id)
            ids |= {f"{self.sub.call.id}/{i}" for i in self.sub.snapshot.waiting_ids()}
        return ids

    def restore(self) -> TurnState:
        return TurnState(
            list(self.messages), self.steps, self.usage, list(self.partial), self.elapsed_s
        )


@dataclass(frozen=True, slots=True)
class SubTurn:
    """A sub-turn paused inside its parent's step: the delegation call (as prepared) that
    started it, and the sub-turn's own snapshot. Its held calls' ids are the parent call's id,
    a slash, and their own (`c1/c3`)."""

    call: ToolCallRequest
    snapshot: TurnSnapshot


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    """The turn stopped: `held` calls wait for a person; resume with `resume_turn`."""

    snapshot: TurnSnapshot
    held: tuple[ToolCallRequest, ...]
