"""The post hooks run on every call that went out, whatever its end: a call that failed and one
that timed out reach them with their status, and what they return is what the model sees (a
hook that fails withholds even an error's text)."""

from __future__ import annotations

from palui.domain import ToolCallRequest
from palui.tools.context import CallContext, CallPorts, PolicyInputs
from palui.tools.hooks import load_hooks
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules
from palui.tools.runner import CallRunner
from tests.toolkit import FunctionToolset, MemoryRecorder


async def _broken(**_: object) -> str:
    raise RuntimeError("the disk is full")


async def _slow(**_: object) -> str:
    raise TimeoutError  # as a connector's call past its time limit ends


def tools(post: str) -> tuple[CallRunner, MemoryRecorder]:
    toolset = FunctionToolset("fn", {"save": _broken, "sync": _slow}, trust="trusted")
    recorder = MemoryRecorder()
    rules = ToolRules(post_hooks=load_hooks([post]))
    context = CallContext("t", policy=PolicyInputs(rules=rules), ports=CallPorts(recorder))
    return CallRunner(context, ToolRegistry([toolset]).offer("", 30)), recorder


async def test_post_hooks_see_a_failed_and_a_timed_out_call_with_their_status() -> None:
    runner, recorder = tools("tests.hooks_fixture:label_status")
    failed = await runner.run(ToolCallRequest("c1", "fn__save", "{}"), 1)
    assert failed.is_error and failed.text.startswith("[error] Error: the tool failed")
    timed_out = await runner.run(ToolCallRequest("c2", "fn__sync", "{}"), 1)
    assert timed_out.is_error and timed_out.text.startswith("[timeout] ")
    statuses = {r["tool"]: r["status"] for r in recorder.records.values()}
    assert statuses == {"fn__save": "error", "fn__sync": "timeout"}
    adjusted = [s for r in recorder.records.values() for s in r["stages"] if s[0] == "post_hook"]
    assert adjusted == [("post_hook", "adjusted"), ("post_hook", "adjusted")]


async def test_a_failing_post_hook_withholds_a_failed_calls_result_too() -> None:
    runner, recorder = tools("tests.hooks_fixture:explode_after")
    outcome = await runner.run(ToolCallRequest("c1", "fn__sync", "{}"), 1)
    assert outcome.is_error and "result was withheld because a safety check failed" in outcome.text
    assert "can't parse timeout result" in outcome.text
    stages = [s for r in recorder.records.values() for s in r["stages"]]
    assert ("post_hook", "failed") in stages
