"""One turn of the agent loop: model step -> tool calls -> results -> ... -> final answer.

Pure orchestration over injected dependencies (a model, a tool runner, a usage sink): no
database, no Telegram, no litellm here. Budgets: `max_steps` model calls (when the last one still
asks for tools, they are not run and no further call is made) and `timeout_s` of wall-clock time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from palui.domain import (
    Completion,
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

    def add_usage(self, usage: Usage) -> None:
        self.usage = Usage(
            self.usage.prompt_tokens + usage.prompt_tokens,
            self.usage.completion_tokens + usage.completion_tokens,
        )


def _budget_reply(state: TurnState, budget: str, note: str) -> Reply:
    so_far = "\n\n".join(p.strip() for p in state.partial if p.strip())
    if so_far:
        text = f"{note} Here is what I have so far:\n\n{so_far}"
    else:
        text = f"{note} I had no answer yet; try a narrower request."
    return Reply(text=text, usage=state.usage, steps=state.steps, budget_hit=budget)


async def _step(deps: TurnDeps, state: TurnState) -> Completion:
    started = deps.clock()
    completion = await deps.model.complete(state.messages, deps.tools, on_delta=deps.on_delta)
    state.steps += 1
    state.add_usage(completion.usage)
    await deps.record_usage(completion, deps.clock() - started)
    return completion


async def _run_calls(
    deps: TurnDeps, calls: Sequence[ToolCallRequest], step: int
) -> list[ToolOutcome]:
    """Run the step's calls in order; a run of consecutive read-only calls goes concurrently."""
    runner = deps.runner
    if runner is None:
        missing = ToolOutcome("Error: no tools are available in this turn.", is_error=True)
        return [missing for _ in calls]
    outcomes: list[ToolOutcome] = []
    index = 0
    while index < len(calls):
        group = [calls[index]]
        if runner.concurrent_safe(calls[index].name):
            while index + len(group) < len(calls) and runner.concurrent_safe(
                calls[index + len(group)].name
            ):
                group.append(calls[index + len(group)])
        outcomes += await asyncio.gather(*(runner.run(call, step) for call in group))
        index += len(group)
    return outcomes


async def _loop(deps: TurnDeps, state: TurnState) -> Reply:
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
        outcomes = await _run_calls(deps, completion.tool_calls, state.steps)
        for call, outcome in zip(completion.tool_calls, outcomes, strict=True):
            state.messages.append(
                Message(Role.TOOL, outcome.text, tool_call_id=call.id, name=call.name)
            )
    return _budget_reply(
        state, "steps", f"I stopped after {deps.max_steps} steps (the limit for one turn)."
    )


async def run_turn(deps: TurnDeps, messages: Sequence[Message]) -> Reply:
    """Run the loop until a final answer or a budget ends it. Cancellation propagates."""
    state = TurnState(messages=list(messages))
    try:
        async with asyncio.timeout(deps.timeout_s):
            return await _loop(deps, state)
    except TimeoutError:
        return _budget_reply(
            state, "time", f"I stopped after {deps.timeout_s:g} s (the limit for one turn)."
        )
