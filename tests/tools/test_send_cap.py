"""The daily send cap counts calls that send a message to someone: writes and destructive calls
of tools that send out, not reads that reach a URL, nor the tools `[limits] send_cap_exempt`
names (they send from the person's own mailbox). 0 is unlimited; the default is 100."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from palui.config import Settings
from palui.domain import ToolCallRequest
from palui.policy.kinds_file import parse_kinds_file
from palui.tools.catalog import ToolCatalog
from palui.tools.context import CallContext, CallPorts, PolicyInputs
from palui.tools.registry import ToolRegistry
from palui.tools.rules import ToolRules
from palui.tools.runner import CallRunner
from tests.toolkit import FunctionToolset

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
KINDS = parse_kinds_file(
    "tools:\n"
    "  fn__fetch:\n    kind: read\n    sends_out: true\n"
    "  fn__send_message:\n    kind: sends_out\n"
    "  fn__send_own:\n    kind: sends_out\n"
)


async def _sent(**_: object) -> str:
    return "sent"


def toolset() -> FunctionToolset:
    return FunctionToolset(
        "fn", {"fetch": _sent, "send_message": _sent, "send_own": _sent}, read_only=["fetch"]
    )


def turn(store: Any, tools: FunctionToolset, rules: ToolRules, turn_id: str = "t1") -> CallRunner:
    offer = ToolRegistry([tools]).offer("", 30)
    policy = PolicyInputs(ToolCatalog(KINDS, {}, {}), rules)
    ports = CallPorts(store.tool_calls, now=lambda: NOW)
    return CallRunner(CallContext(turn_id, 7, policy=policy, ports=ports), offer)


async def run(tools: CallRunner, name: str, times: int) -> list[bool]:
    """Whether each call ran (`is_error` false)."""
    outcomes = []
    for number in range(times):
        call = ToolCallRequest(f"{name}-{number}", f"fn__{name}", '{"to": "ana@example.org"}')
        outcomes.append(not (await tools.run(call, number + 1)).is_error)
    return outcomes


async def test_reads_that_reach_a_url_leave_the_cap_untouched(store) -> None:
    functions = toolset()
    tools = turn(store, functions, ToolRules(daily_send_cap=2))
    assert all(await run(tools, "fetch", 150))
    assert await store.tool_calls.sends_since(NOW.replace(hour=0)) == 0
    assert await run(tools, "send_message", 3) == [True, True, False]


async def test_an_exempt_tool_is_not_counted(store) -> None:
    rules = ToolRules(daily_send_cap=1, send_cap_exempt=frozenset({"fn__send_own"}))
    tools = turn(store, toolset(), rules)
    assert all(await run(tools, "send_own", 3))
    assert await run(tools, "send_message", 2) == [True, False]
    assert await store.tool_calls.sends_since(NOW.replace(hour=0), {"fn__send_own"}) == 1


async def test_cap_zero_is_unlimited_and_the_default_is_one_hundred(store) -> None:
    unlimited = turn(store, toolset(), ToolRules(daily_send_cap=0))
    assert all(await run(unlimited, "send_message", 120))
    assert Settings().daily_send_cap == 100
    rules = ToolRules.from_settings(Settings(send_cap_exempt="fn__send_own, x__y"))
    assert rules.daily_send_cap == 100 and rules.send_cap_exempt == {"fn__send_own", "x__y"}
    # The 120 sends of today already count against the default: the next is refused.
    capped = turn(store, toolset(), ToolRules(daily_send_cap=100), "t2")
    assert await run(capped, "send_message", 1) == [False]
    roomier = turn(store, toolset(), ToolRules(daily_send_cap=121), "t3")
    assert await run(roomier, "send_message", 2) == [True, False]
