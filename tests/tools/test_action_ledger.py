"""Duplicate protection: a world-changing call fires once, whatever the model or a crash does."""

from __future__ import annotations

import asyncio

from palui.db import Store
from palui.domain import ToolCallRequest
from palui.tools.context import CallContext, CallPorts
from palui.tools.registry import ToolRegistry
from palui.tools.runner import CallRunner
from tests.toolkit import FunctionToolset, MemoryRecorder


class Mailer:
    """A toolset whose `send` counts how often it really ran."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.fail_next = False
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()

    async def send(self, to: str) -> str:
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("smtp down")
        self.sent.append(to)
        return f"sent to {to}"

    def toolset(self) -> FunctionToolset:
        return FunctionToolset(
            "mcp-mail", {"send": self.send, "peek": self.peek}, read_only=["peek"]
        )

    async def peek(self) -> str:
        return f"{len(self.sent)} sent"


def tools_for(store: Store, mailer: Mailer, turn: str) -> CallRunner:
    offer = ToolRegistry([mailer.toolset()]).offer("", 30)
    ports = CallPorts(MemoryRecorder(), store.actions)
    return CallRunner(CallContext(turn, 7, ports=ports), offer)


SEND = ToolCallRequest("c", "mcp-mail__send", '{"to": "ana"}')


async def test_the_same_write_twice_fires_once_and_a_rerun_fires_nothing(store: Store) -> None:
    mailer = Mailer()
    tools = tools_for(store, mailer, "t1")
    first = await tools.run(SEND, 1)
    second = await tools.run(ToolCallRequest("d", "mcp-mail__send", '{ "to":"ana" }'), 2)
    assert first.text == "sent to ana"
    assert second.text.startswith("Already done") and "sent to ana" in second.text
    rerun = await tools_for(store, mailer, "t2").run(SEND, 1)  # e.g. the turn after a crash
    assert rerun.text.startswith("Already done")
    assert mailer.sent == ["ana"]


async def test_reads_are_never_held_back(store: Store) -> None:
    mailer = Mailer()
    tools = tools_for(store, mailer, "t1")
    peek = ToolCallRequest("p", "mcp-mail__peek", "{}")
    assert (await tools.run(peek, 1)).text == "0 sent"
    await tools.run(SEND, 1)
    assert (await tools.run(peek, 2)).text == "1 sent"


async def test_a_failed_write_may_run_again(store: Store) -> None:
    mailer = Mailer()
    mailer.fail_next = True
    tools = tools_for(store, mailer, "t1")
    assert (await tools.run(SEND, 1)).is_error
    assert (await tools.run(SEND, 2)).text == "sent to ana"
    assert mailer.sent == ["ana"]


async def test_a_call_in_progress_is_not_started_again(store: Store) -> None:
    mailer = Mailer()
    mailer.gate = asyncio.Event()
    first = asyncio.create_task(tools_for(store, mailer, "t1").run(SEND, 1))
    await mailer.started.wait()
    second = await tools_for(store, mailer, "t2").run(SEND, 1)
    assert "already running" in second.text
    mailer.gate.set()
    assert (await first).text == "sent to ana"
    assert mailer.sent == ["ana"]


async def test_an_interrupted_call_is_unknown_after_a_restart_and_never_refired(
    store: Store,
) -> None:
    mailer = Mailer()
    mailer.gate = asyncio.Event()  # never opened: the "process" dies mid-call
    task = asyncio.create_task(tools_for(store, mailer, "t1").run(SEND, 1))
    await mailer.started.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await store.recovery.recover_chat(7, "restart")
    mailer.gate = None
    again = await tools_for(store, mailer, "t2").run(SEND, 1)
    assert again.text.startswith("Unknown outcome")
    assert mailer.sent == []
