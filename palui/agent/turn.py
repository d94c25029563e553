"""One turn of the agent loop: model step -> tool calls -> results -> ... -> final answer.

Pure orchestration over injected dependencies (a model, a tool runner, a usage sink): no
database, no Telegram, no litellm here. Budgets: `max_steps` model calls (when the last one still
asks for tools, they are not run and no further call is made) and `timeout_s` of wall-clock time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from palui.domain import (
    Completion,
    HeldDecision,
    Message,
    Reply,
    Role,
    ToolCallRequest,
    ToolOutcome,
    ToolSpec,
    Usage,
)
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


@dataclass(slots=True)
class TurnState:
    """What changes while a turn runs."""

    messages: list[Message]
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    partial: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0  # run time before the last pause

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

    @classmethod
    def of(
        cls, state: TurnState, calls: Sequence[ToolCallRequest], outcomes: dict[str, ToolOutcome]
    ) -> TurnSnapshot:
        return cls(
            tuple(state.messages), state.steps, state.usage, tuple(state.partial),
            state.elapsed_s, tuple(calls), dict(outcomes),
        )  # fmt: skip

    def restore(self) -> TurnState:
        return TurnState(
            list(self.messages), self.steps, self.usage, list(self.partial), self.elapsed_s
        )


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    """The turn stopped: `held` calls wait for a person; resume with `resume_turn`."""

    snapshot: TurnSnapshot
    held: tuple[ToolCallRequest, ...]


def _budget_reply(state: TurnState, budget: str, note: str) -> Reply:
    so_far = "\n\n".join(p.strip() for p in state.partial if p.strip())
    if so_far:
        text = f"{note} Here is what I have so far:\n\n{so_far}"
    else:
        text = f"{note} I had no answer yet; try a narrower request."
    return Reply(text=text, usage=state.usage, steps=state.steps, budget_hit=budget)


async def _step(deps: TurnDeps, state: TurnState) -> Completion:
    started = deps.clock()
    tools = deps.offered() if deps.offered is not None else deps.tools
    completion = await deps.model.complete(state.messages, tools, on_delta=deps.on_delta)
    state.steps += 1
    state.add_usage(completion.usage)
    await deps.record_usage(completion, deps.clock() - started)
    return completion


async def _run_calls(
    deps: TurnDeps, calls: Sequence[ToolCallRequest], step: int
) -> tuple[dict[str, ToolOutcome], list[ToolCallRequest]]:
    """Run the step's calls in order (a run of consecutive read-only calls concurrently).

    Each call is first prepared (the operator's hooks and guards may settle it or change its
    arguments); whether it then needs a person's approval is asked right before it would run,
    so a result read earlier in the same step (which may taint the turn) counts. Returns the
    outcomes by call id and the calls held for approval, as prepared (the cards show those).
    """
    runner = deps.runner
    if runner is None:
        missing = ToolOutcome("Error: no tools are available in this turn.", is_error=True)
        return {call.id: missing for call in calls}, []
    outcomes: dict[str, ToolOutcome] = {}
    held: list[ToolCallRequest] = []
    index = 0
    while index < len(calls):
        call = calls[index]
        if not runner.concurrent_safe(call.name):
            prepared = await runner.prepare(call, step)
            index += 1
            if isinstance(prepared, ToolOutcome):
                outcomes[call.id] = prepared
            elif runner.needs_approval(prepared):
                held.append(prepared)
            else:
                outcomes[call.id] = await runner.run(prepared, step)
            continue
        group = [call]
        while index + len(group) < len(calls) and runner.concurrent_safe(
            calls[index + len(group)].name
        ):
            group.append(calls[index + len(group)])
        index += len(group)
        ready: list[ToolCallRequest] = []
        for member in group:
            prepared = await runner.prepare(member, step)
            if isinstance(prepared, ToolOutcome):
                outcomes[member.id] = prepared
            elif runner.needs_approval(prepared):
                held.append(prepared)
            else:
                ready.append(prepared)
        results = await asyncio.gather(*(runner.run(c, step) for c in ready))
        outcomes.update((c.id, r) for c, r in zip(ready, results, strict=True))
    return outcomes, held


def _add_results(
    state: TurnState, calls: Sequence[ToolCallRequest], outcomes: dict[str, ToolOutcome]
) -> None:
    for call in calls:
        outcome = outcomes[call.id]
        state.messages.append(
            Message(Role.TOOL, outcome.text, tool_call_id=call.id, name=call.name)
        )


async def _loop(deps: TurnDeps, state: TurnState) -> Reply | NeedsApproval:
    while state.steps < deps.max_steps:
        completion = await _step(deps, state)
        if not completion.tool_calls:
            return Reply(completion.content, usage=state.usage, steps=state.steps)
        if completion.content.strip():
            state.partial.append(completion.content)
        if state.steps >= deps.max_steps:
            break  # the last allowed step still wants tools: run none, call no more
        state.messages.append(
            Message(Role.ASSISTANT, completion.content, tool_calls=completion.tool_calls)
        )
        outcomes, held = await _run_calls(deps, completion.tool_calls, state.steps)
        if held:
            return NeedsApproval(
                TurnSnapshot.of(state, completion.tool_calls, outcomes), tuple(held)
            )
        _add_results(state, completion.tool_calls, outcomes)
    return _budget_reply(
        state, "steps", f"I stopped after {deps.max_steps} steps (the limit for one turn)."
    )


async def _bounded(deps: TurnDeps, state: TurnState) -> Reply | NeedsApproval:
    started = deps.clock()
    budget = max(deps.timeout_s - state.elapsed_s, 0)
    try:
        async with asyncio.timeout(budget):
            result = await _loop(deps, state)
    except TimeoutError:
        return _budget_reply(
            state, "time", f"I stopped after {deps.timeout_s:g} s (the limit for one turn)."
        )
    if isinstance(result, NeedsApproval):
        # Time spent waiting for a tap does not count against the turn.
        elapsed = state.elapsed_s + deps.clock() - started
        return NeedsApproval(dataclasses.replace(result.snapshot, elapsed_s=elapsed), result.held)
    return result


async def run_turn(deps: TurnDeps, messages: Sequence[Message]) -> Reply | NeedsApproval:
    """Run the loop until a final answer, a budget, or calls that wait for a person's approval.

    Cancellation propagates (the caller records what was interrupted).
    """
    return await _bounded(deps, TurnState(messages=list(messages)))


async def resume_turn(
    deps: TurnDeps, snapshot: TurnSnapshot, decisions: Mapping[str, HeldDecision]
) -> Reply | NeedsApproval:
    """Continue a paused turn once each held call is decided (by call id): approved calls run
    here, through the turn's runner like any call, before the next model step.

    They run outside the turn's time budget (a person's approval is not cut short by the time
    the turn spent before it paused); cancellation propagates as for any call."""
    state = snapshot.restore()
    outcomes = dict(snapshot.outcomes)
    held = [call for call in snapshot.step_calls if call.id not in outcomes]
    missing = [call.id for call in held if call.id not in decisions]
    if missing:
        raise ValueError(f"no decision for held calls {missing}")
    runner = deps.runner
    for call in held:
        if runner is None:
            raise ValueError("held calls need a tool runner")
        outcomes[call.id] = await runner.run_held(decisions[call.id], snapshot.steps)
    _add_results(state, snapshot.step_calls, outcomes)
    return await _bounded(deps, state)
