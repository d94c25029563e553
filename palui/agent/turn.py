"""One turn of the agent loop: model step -> tool calls -> results -> ... -> final answer.

Pure orchestration over injected dependencies (a model, a tool runner, a usage sink): no
database, no Telegram, no litellm here. Budgets: `max_steps` model calls (when the last one still
asks for tools, they are not run and no further call is made) and `timeout_s` of wall-clock time.
A delegation call (`TurnDeps.delegate`) runs a sub-turn here, within those budgets
(`palui.agent.subturn`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence

from palui.agent import subturn
from palui.agent.state import (
    NeedsApproval,
    SubTurn,
    TurnDeps,
    TurnSnapshot,
    TurnState,
    UsageSink,
)
from palui.domain import (
    Completion,
    HeldDecision,
    Message,
    Reply,
    Role,
    ToolCallRequest,
    ToolOutcome,
)
from palui.domain.waits import counted
from palui.ports import Delegations

__all__ = [
    "NeedsApproval",
    "SubTurn",
    "TurnDeps",
    "TurnSnapshot",
    "TurnState",
    "UsageSink",
    "resume_turn",
    "run_turn",
]


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


@dataclasses.dataclass(slots=True)
class _Step:
    """What the calls of one model step came to."""

    outcomes: dict[str, ToolOutcome] = dataclasses.field(default_factory=dict)
    held: list[ToolCallRequest] = dataclasses.field(default_factory=list)
    sub: SubTurn | None = None  # a sub-turn that waits for a person


async def _run_calls(
    deps: TurnDeps, state: TurnState, calls: Sequence[ToolCallRequest], step: int
) -> _Step:
    """Run the step's calls in order (a run of consecutive read-only calls concurrently).

    Each call is first prepared (the operator's hooks and guards may settle it or change its
    arguments); whether it then needs a person's approval is asked right before it would run,
    so a result read earlier in the same step (which may taint the turn) counts. Gives the
    outcomes by call id and the calls held for approval, as prepared (the cards show those).
    """
    done = _Step()
    runner = deps.runner
    if runner is None:
        missing = ToolOutcome("Error: no tools are available in this turn.", is_error=True)
        done.outcomes = {call.id: missing for call in calls}
        return done
    index = 0
    while index < len(calls):
        call = calls[index]
        if not runner.concurrent_safe(call.name) or call.name == deps.delegate:
            prepared = await runner.prepare(call, step)
            index += 1
            if isinstance(prepared, ToolOutcome):
                done.outcomes[call.id] = prepared
            elif runner.needs_approval(prepared):
                done.held.append(prepared)
            elif call.name == deps.delegate and done.sub is None:
                await _delegate(deps, state, call.id, prepared, step, done)
            else:
                done.outcomes[call.id] = await runner.run(prepared, step)
            continue
        group = [call]
        while (
            index + len(group) < len(calls)
            and runner.concurrent_safe(calls[index + len(group)].name)
            and calls[index + len(group)].name != deps.delegate
        ):
            group.append(calls[index + len(group)])
        index += len(group)
        ready: list[tuple[str, ToolCallRequest]] = []
        for member in group:
            prepared = await runner.prepare(member, step)
            if isinstance(prepared, ToolOutcome):
                done.outcomes[member.id] = prepared
            elif runner.needs_approval(prepared):
                done.held.append(prepared)
            else:
                ready.append((member.id, prepared))
        results = await asyncio.gather(*(runner.run(c, step) for _, c in ready))
        done.outcomes.update((key, r) for (key, _), r in zip(ready, results, strict=True))
    return done


def _time_left(deps: TurnDeps, state: TurnState) -> float:
    return deps.timeout_s - state.elapsed_s - (deps.clock() - state.drive_started)


async def _delegate(
    deps: TurnDeps,
    state: TurnState,
    key: str,
    call: ToolCallRequest,
    step: int,
    done: _Step,
    sub: TurnSnapshot | None = None,
    decisions: Mapping[str, HeldDecision] | None = None,
) -> None:
    """Run (or resume) the sub-turn of the delegation `call`: its answer becomes the call's
    outcome, or it waits for a person and the parent waits with it. One sub-turn may wait per
    step; a second delegation in that step is refused."""
    runner = deps.runner
    if not isinstance(runner, Delegations):
        done.outcomes[key] = ToolOutcome("Error: delegation is not available here.", True)
        return
    task = subturn.task_of(call)
    if task is None:
        done.outcomes[key] = ToolOutcome("Error: 'task' must say what to do.", is_error=True)
        return
    refused = await runner.delegating(call, step, task, resumed=sub is not None)
    if refused is not None:
        done.outcomes[key] = refused
        return
    steps_left = deps.max_steps - state.steps
    child = subturn.sub_deps(deps, call, steps_left, _time_left(deps, state))
    try:
        if sub is None:
            result = await _bounded(child, TurnState(subturn.sub_messages(task)))
        else:
            mine = subturn.sub_decisions(call, dict(decisions or {}))
            result = await resume_turn(child, sub, mine)
    except asyncio.CancelledError:  # /stop stops the whole tree; the call's record says so
        stopped = ToolOutcome("The sub-task was stopped.", is_error=True)
        await asyncio.shield(runner.delegated(call, step, stopped, cut_short=True))
        raise
    if isinstance(result, NeedsApproval):
        done.sub = SubTurn(call, result.snapshot)
        done.held.extend(result.held)
        return
    # The sub-turn's steps and tokens are the parent's: the whole tree stays within its budget.
    state.steps += result.steps
    state.add_usage(result.usage)
    text = result.text
    if result.budget_hit:
        text = f"The sub-task stopped at the turn's {result.budget_hit} limit. {text}"
    outcome = ToolOutcome(text, is_error=bool(result.budget_hit))
    await runner.delegated(call, step, outcome)
    done.outcomes[key] = outcome


def _add_results(
    state: TurnState, calls: Sequence[ToolCallRequest], outcomes: dict[str, ToolOutcome]
) -> None:
    for call in calls:
        outcome = outcomes[call.id]
        state.messages.append(
            Message(Role.TOOL, outcome.text, tool_call_id=call.id, name=call.name)
        )


def _paused(state: TurnState, calls: Sequence[ToolCallRequest], done: _Step) -> NeedsApproval:
    return NeedsApproval(TurnSnapshot.of(state, calls, done.outcomes, done.sub), tuple(done.held))


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
        done = await _run_calls(deps, state, completion.tool_calls, state.steps)
        if done.held:
            return _paused(state, completion.tool_calls, done)
        _add_results(state, completion.tool_calls, done.outcomes)
    return _budget_reply(
        state, "steps", f"I stopped after {deps.max_steps} steps (the limit for one turn)."
    )


async def _bounded(deps: TurnDeps, state: TurnState) -> Reply | NeedsApproval:
    started = state.drive_started = deps.clock()
    budget = max(deps.timeout_s - state.elapsed_s, 0)
    try:
        async with asyncio.timeout(budget) as timeout:
            with counted(timeout):  # a server's question to the person pauses it
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
    here, through the turn's runner like any call, before the next model step; a sub-turn that
    waited is resumed with the decisions on its calls.

    They run outside the turn's time budget (a person's approval is not cut short by the time
    the turn spent before it paused); cancellation propagates as for any call."""
    state = snapshot.restore()
    state.drive_started = deps.clock()
    sub = snapshot.sub
    done = _Step(outcomes=dict(snapshot.outcomes))
    held = [call for call in snapshot.step_calls if call.id not in done.outcomes]
    missing = [
        call.id
        for call in held
        if call.id not in decisions and (sub is None or call.id != sub.call.id)
    ]
    if missing:
        raise ValueError(f"no decision for held calls {missing}")
    runner = deps.runner
    for call in held:
        if runner is None:
            raise ValueError("held calls need a tool runner")
        if sub is not None and call.id == sub.call.id:
            await _delegate(
                deps, state, call.id, sub.call, snapshot.steps, done, sub.snapshot, decisions
            )
        else:
            done.outcomes[call.id] = await runner.run_held(decisions[call.id], snapshot.steps)
    if done.held:  # the sub-turn waits for a person again
        return _paused(state, snapshot.step_calls, done)
    _add_results(state, snapshot.step_calls, done.outcomes)
    return await _bounded(deps, state)
