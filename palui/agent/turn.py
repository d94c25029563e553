"""One turn of the agent loop: model step -> (tools) -> ... -> final answer, within budgets.

Pure orchestration over injected dependencies: no database, no Telegram, no litellm here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from palui.domain import Completion, Message, Reply, Role, ToolSpec, Usage
from palui.ports import ChatModel

UsageSink = Callable[[Completion, float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class TurnDeps:
    model: ChatModel
    record_usage: UsageSink
    max_steps: int = 12
    timeout_s: float = 120
    tools: Sequence[ToolSpec] = ()
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
    so_far = "\n\n".join(p for p in state.partial if p.strip())
    text = f"{note} Here is what I have so far:\n\n{so_far}" if so_far else f"{note}"
    return Reply(text=text, usage=state.usage, steps=state.steps, budget_hit=budget)


async def _step(deps: TurnDeps, state: TurnState) -> Completion:
    started = deps.clock()
    completion = await deps.model.complete(state.messages, deps.tools)
    state.steps += 1
    state.add_usage(completion.usage)
    await deps.record_usage(completion, deps.clock() - started)
    return completion


async def _loop(deps: TurnDeps, state: TurnState) -> Reply:
    while state.steps < deps.max_steps:
        completion = await _step(deps, state)
        if not completion.tool_calls:
            return Reply(completion.content, usage=state.usage, steps=state.steps)
        if completion.content.strip():
            state.partial.append(completion.content)
        state.messages.append(
            Message(Role.ASSISTANT, completion.content, tool_calls=completion.tool_calls)
        )
        offered = {tool.name for tool in deps.tools}
        for call in completion.tool_calls:
            # No tool runs from here yet: every call gets a result the model can recover from.
            reason = "is not available in this turn" if call.name not in offered else "can't run"
            state.messages.append(
                Message(
                    Role.TOOL,
                    f"Error: the tool {call.name!r} {reason}. Answer without it.",
                    tool_call_id=call.id,
                    name=call.name,
                )
            )
    return _budget_reply(
        state,
        "steps",
        f"I stopped after {deps.max_steps} steps (the limit for one turn).",
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
