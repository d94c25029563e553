"""The agent loop: tools, budgets, concurrency, and what the model is told when things go wrong."""

from __future__ import annotations

import asyncio

from palui.agent.turn import TurnDeps, run_turn
from palui.domain import (
    Completion,
    HeldDecision,
    Message,
    Role,
    ToolCallRequest,
    ToolOutcome,
    Usage,
    Verdict,
)
from palui.tools.context import CallContext, CallPorts
from palui.tools.registry import ToolRegistry
from palui.tools.runner import CallRunner
from tests.toolkit import FunctionToolset, MemoryRecorder, ScriptedModel, answer, call, no_usage

USER = [Message(Role.SYSTEM, "system"), Message(Role.USER, "what notes do I have?")]


def deps_for(model, *toolsets, recorder=None, **limits) -> tuple[TurnDeps, CallRunner]:
    offer = ToolRegistry(list(toolsets)).offer("", 30)
    ports = CallPorts(recorder or MemoryRecorder())
    context = CallContext("turn-1", ports=ports, **limits.pop("context", {}))
    tools = CallRunner(context, offer)
    deps = TurnDeps(model, no_usage, tools=offer.specs, runner=tools, **limits)
    return deps, tools


async def test_a_tool_result_goes_back_to_the_model_which_answers_with_it() -> None:
    async def list_notes() -> str:
        return "groceries, taxes"

    notes = FunctionToolset("mcp-notes", {"list_notes": list_notes}, read_only=["list_notes"])
    model = ScriptedModel([call("mcp-notes__list_notes"), answer("You have: groceries, taxes")])
    deps, _ = deps_for(model, notes)
    reply = await run_turn(deps, USER)
    assert reply.text == "You have: groceries, taxes"
    assert reply.steps == 2
    offered = [tool.name for tool in model.calls[0][1]]
    assert offered == ["mcp-notes__list_notes"]
    sent_back = model.calls[1][0][-1]
    assert (sent_back.role, sent_back.content, sent_back.tool_call_id) == (
        Role.TOOL, "groceries, taxes", "c1",
    )  # fmt: skip


async def test_a_model_that_calls_tools_forever_stops_after_12_model_calls() -> None:
    async def ping() -> str:
        return "pong"

    toolset = FunctionToolset("mcp-x", {"ping": ping})
    model = ScriptedModel(forever=call("mcp-x__ping"))
    deps, _ = deps_for(model, toolset, max_steps=12)
    reply = await run_turn(deps, USER)
    assert len(model.calls) == 12  # never a 13th
    assert len(toolset.calls) == 11  # the 12th step's calls are not run
    assert reply.budget_hit == "steps"
    assert reply.text.startswith("I stopped after 12 steps (the limit for one turn).")


async def test_a_slow_turn_is_stopped_by_the_time_budget_and_says_so() -> None:
    never = asyncio.Event()

    async def hang(messages: list[Message]) -> Completion:
        await never.wait()
        raise AssertionError("unreachable")

    model = ScriptedModel([hang])
    deps, _ = deps_for(model, timeout_s=0.05)
    reply = await run_turn(deps, USER)
    assert reply.budget_hit == "time"
    assert reply.text.startswith("I stopped after 0.05 s (the limit for one turn).")


async def test_read_only_calls_of_one_step_run_concurrently() -> None:
    both_started = asyncio.Barrier(2)

    async def lookup(q: str) -> str:
        async with asyncio.timeout(5):
            await both_started.wait()  # deadlocks unless both calls run at once
        return f"found {q}"

    toolset = FunctionToolset("mcp-s", {"lookup": lookup}, read_only=["lookup"])
    two_calls = Completion(
        "scripted", "",
        (ToolCallRequest("a", "mcp-s__lookup", '{"q": "x"}'),
         ToolCallRequest("b", "mcp-s__lookup", '{"q": "y"}')),
        Usage(1, 1),
    )  # fmt: skip
    model = ScriptedModel([two_calls, answer("done")])
    deps, _ = deps_for(model, toolset)
    assert (await run_turn(deps, USER)).text == "done"
    results = [m.content for m in model.calls[1][0] if m.role == Role.TOOL]
    assert results == ["found x", "found y"]


async def test_calls_that_may_change_things_run_one_after_another() -> None:
    running = 0
    overlap = False

    async def add_note(title: str) -> str:
        nonlocal running, overlap
        running += 1
        overlap = overlap or running > 1
        await asyncio.sleep(0)
        running -= 1
        return f"added {title}"

    toolset = FunctionToolset("mcp-n", {"add_note": add_note})
    calls = tuple(ToolCallRequest(f"c{i}", "mcp-n__add_note", f'{{"title": "{i}"}}') for i in "ab")
    model = ScriptedModel([Completion("scripted", "", calls, Usage(1, 1)), answer("ok")])
    deps, _ = deps_for(model, toolset)
    await run_turn(deps, USER)
    assert [c[1]["title"] for c in toolset.calls] == ["a", "b"]
    assert not overlap


async def test_an_invented_tool_name_gets_an_error_the_model_can_recover_from() -> None:
    recorder = MemoryRecorder()
    model = ScriptedModel([call("mcp-web__delete_everything"), answer("Sorry, I can't do that.")])
    deps, _ = deps_for(model, recorder=recorder)
    reply = await run_turn(deps, USER)
    assert reply.text == "Sorry, I can't do that."
    error = model.calls[1][0][-1].content
    assert "no tool named 'mcp-web__delete_everything'" in error
    assert [r["status"] for r in recorder.records.values()] == ["rejected"]


async def test_arguments_that_are_not_json_get_a_plain_error() -> None:
    async def add_note(title: str) -> str:
        return "added"

    toolset = FunctionToolset("mcp-n", {"add_note": add_note})
    model = ScriptedModel([call("mcp-n__add_note", "{title: oops"), answer("fixed")])
    deps, _ = deps_for(model, toolset)
    await run_turn(deps, USER)
    assert "not valid JSON" in model.calls[1][0][-1].content
    assert toolset.calls == []


async def test_a_huge_tool_result_is_truncated_with_a_marker() -> None:
    async def dump() -> str:
        return "x" * 50_000

    toolset = FunctionToolset("mcp-d", {"dump": dump})
    model = ScriptedModel([call("mcp-d__dump"), answer("ok")])
    deps, _ = deps_for(model, toolset, context={"result_limit": 1000})
    await run_turn(deps, USER)
    result = model.calls[1][0][-1].content
    assert result.startswith("x" * 1000)
    assert result.endswith("[… truncated: 49,000 more characters]")


async def test_a_tool_call_cancelled_mid_flight_is_recorded_as_unknown_outcome() -> None:
    started = asyncio.Event()

    async def slow_op() -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    recorder = MemoryRecorder()
    toolset = FunctionToolset("mcp-n", {"slow_op": slow_op})
    model = ScriptedModel([call("mcp-n__slow_op")])
    deps, tools = deps_for(model, toolset, recorder=recorder)
    task = asyncio.create_task(run_turn(deps, USER))
    await started.wait()
    assert tools.in_flight() == ["mcp-n__slow_op"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert [r["status"] for r in recorder.records.values()] == ["unknown"]
    assert tools.in_flight() == []


class AskFor:
    """Wraps a runner: calls to the named tools wait for approval."""

    def __init__(self, inner: CallRunner, *names: str) -> None:
        self.inner = inner
        self.names = set(names)

    def concurrent_safe(self, name: str) -> bool:
        return self.inner.concurrent_safe(name)

    def needs_approval(self, call: ToolCallRequest) -> bool:
        return call.name in self.names

    async def prepare(self, call: ToolCallRequest, step: int):
        return await self.inner.prepare(call, step)

    async def run(self, call: ToolCallRequest, step: int):
        return await self.inner.run(call, step)

    async def run_held(self, decision: HeldDecision, step: int) -> ToolOutcome:
        if decision.verdict is Verdict.APPROVED:
            return await self.inner.run_approved(decision.call, step)
        return ToolOutcome(f"The person {decision.verdict} this call.", is_error=True)


async def test_a_held_call_pauses_the_turn_which_resumes_with_its_outcome() -> None:
    from palui.agent.turn import NeedsApproval, resume_turn

    async def delete_note(id: int) -> str:
        return f"deleted {id}"

    async def list_notes() -> str:
        return "note 12"

    notes = FunctionToolset(
        "mcp-n", {"delete_note": delete_note, "list_notes": list_notes}, read_only=["list_notes"]
    )
    both = Completion(
        "scripted", "",
        (ToolCallRequest("r", "mcp-n__list_notes", "{}"),
         ToolCallRequest("d", "mcp-n__delete_note", '{"id": 12}')),
        Usage(1, 1),
    )  # fmt: skip
    model = ScriptedModel([both, answer("Deleted note 12.")])
    deps, tools = deps_for(model, notes)
    deps = TurnDeps(model, no_usage, tools=deps.tools, runner=AskFor(tools, "mcp-n__delete_note"))

    paused = await run_turn(deps, USER)
    assert isinstance(paused, NeedsApproval)
    assert [c.name for c in paused.held] == ["mcp-n__delete_note"]
    assert notes.calls == [("list_notes", {})]  # the read ran; the delete waits
    assert paused.snapshot.steps == 1

    [held] = paused.held
    denied = HeldDecision("a1", held, Verdict.DENIED)
    reply = await resume_turn(deps, paused.snapshot, {"d": denied})
    assert reply.text == "Deleted note 12."
    tool_messages = [(m.tool_call_id, m.content) for m in model.calls[1][0] if m.role == Role.TOOL]
    assert tool_messages == [("r", "note 12"), ("d", "The person denied this call.")]
    assert notes.calls == [("list_notes", {})]  # nothing ran that was not approved


async def test_time_spent_waiting_for_a_tap_does_not_count_against_the_turn() -> None:
    from palui.agent.turn import NeedsApproval, resume_turn

    now = [0.0]
    model = ScriptedModel([call("mcp-n__send", call_id="s"), answer("sent")])

    async def send() -> str:
        return "ok"

    deps, tools = deps_for(model, FunctionToolset("mcp-n", {"send": send}))
    deps = TurnDeps(
        model, no_usage, tools=deps.tools, runner=AskFor(tools, "mcp-n__send"), timeout_s=10,
        clock=lambda: now[0],
    )  # fmt: skip
    paused = await run_turn(deps, USER)
    assert isinstance(paused, NeedsApproval)
    now[0] += 3600  # an hour until the tap
    [held] = paused.held
    approved = HeldDecision("a1", held, Verdict.APPROVED)
    reply = await resume_turn(deps, paused.snapshot, {"s": approved})
    assert reply.text == "sent" and reply.budget_hit is None
    assert [m.content for m in model.calls[1][0] if m.role == Role.TOOL] == ["ok"]
