"""palui__delegate: a depth-1 sub-turn with a fresh context, inside its parent's budget, under the
same policy; its taint flows back, its cards name the sub-task, /stop stops the tree, and
`palui runs show` shows its calls nested under the delegation call."""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
from pathlib import Path
from typing import Any

import pytest

from palui.agent.subturn import NO_NESTING, SUB_PROMPT
from palui.cli.runs import run_runs
from palui.config import Settings
from palui.domain import Completion, Message, TurnStatus
from tests import toolkit
from tests.fakes.memory_channel import (
    MemoryChannel,
    approval_cards,
    approve,
    in_memory_settings,
    running_palui,
    switch_on,
)

TASK = "Find the price of the blue kettle and report it"
DELEGATE = toolkit.call("palui__delegate", {"task": TASK}, "d1")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def results(messages: list[Message]) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def offered(model: toolkit.ScriptedModel, call: int) -> set[str]:
    return {spec.name for spec in model.calls[call][1]}


async def _price(**_: Any) -> str:
    return "the blue kettle costs 42 EUR"


async def _saved(**_: Any) -> str:
    return "saved"


def shop(trust: str = "trusted") -> toolkit.FunctionToolset:
    return toolkit.FunctionToolset(
        "shop", {"get_price": _price}, read_only=["get_price"], trust=trust
    )


def notes() -> toolkit.FunctionToolset:
    return toolkit.FunctionToolset(
        "notes", {"save_note": _saved, "delete_note": _saved}, destructive=["delete_note"]
    )


async def test_a_sub_turn_starts_fresh_and_its_answer_is_the_delegation_result(
    settings: Settings,
) -> None:
    model = toolkit.ScriptedModel(
        [
            DELEGATE,
            toolkit.call("shop__get_price", {}, "s1"),
            toolkit.answer("It costs 42 EUR."),
            toolkit.answer("The kettle is 42 EUR."),
        ]
    )
    async with running_palui(settings, model, toolsets=[shop()]) as (_app, chat):
        await chat.send("my secret plan: buy the blue kettle. How much is it?")
    assert chat.texts()[-1] == "The kettle is 42 EUR."
    parent, sub = model.calls[0][0], model.calls[1][0]
    assert [m.content for m in sub] == [SUB_PROMPT, TASK]  # only the task, no history
    assert "palui__delegate" in offered(model, 0)
    assert "palui__delegate" not in offered(model, 1)  # depth 1
    assert "shop__get_price" in offered(model, 1)
    assert "my secret plan" in parent[-1].content
    assert results(model.calls[2][0]) == ["the blue kettle costs 42 EUR"]
    assert results(model.calls[3][0]) == ["It costs 42 EUR."]


async def test_a_sub_turn_cannot_delegate_again(settings: Settings) -> None:
    model = toolkit.ScriptedModel(
        [
            DELEGATE,
            toolkit.call("palui__delegate", {"task": "deeper"}, "s1"),
            toolkit.answer("could not"),
            toolkit.answer("done"),
        ]
    )
    async with running_palui(settings, model) as (_app, chat):
        await chat.send("go")
    assert results(model.calls[2][0]) == [NO_NESTING]


async def test_a_sub_turn_that_reads_untrusted_content_makes_the_parents_next_write_ask(
    settings: Settings,
) -> None:
    model = toolkit.ScriptedModel(
        [
            DELEGATE,
            toolkit.call("shop__get_price", {}, "s1"),
            toolkit.answer("42 EUR"),
            toolkit.call("notes__save_note", {}, "c2"),
            toolkit.answer("saved"),
        ]
    )
    toolsets = [shop(trust="untrusted"), notes()]
    async with running_palui(settings, model, toolsets=toolsets) as (app, chat):
        await switch_on(app, "notes", "save_note")
        await chat.send("price of the kettle, then note it")
        (card,) = approval_cards(chat)
    assert "notes__save_note" in card.text and "shop" in card.text  # the why names the source
    assert toolsets[1].calls == []


async def test_a_clean_sub_turn_leaves_the_parents_write_free(settings: Settings) -> None:
    model = toolkit.ScriptedModel(
        [
            DELEGATE,
            toolkit.call("shop__get_price", {}, "s1"),
            toolkit.answer("42 EUR"),
            toolkit.call("notes__save_note", {}, "c2"),
            toolkit.answer("saved"),
        ]
    )
    toolsets = [shop(), notes()]
    async with running_palui(settings, model, toolsets=toolsets) as (app, chat):
        await switch_on(app, "notes", "save_note")
        await chat.send("price of the kettle, then note it")
        assert approval_cards(chat) == []
    assert toolsets[1].calls == [("save_note", {})]


async def test_a_sub_turns_card_names_the_sub_task_survives_a_restart_and_resumes_the_tree(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[Any] = [
        DELEGATE,
        toolkit.call("notes__delete_note", {}, "s1"),  # destructive: always a card
    ]
    first = toolkit.ScriptedModel(steps)
    toolsets = [notes()]
    async with running_palui(settings, first, toolsets=toolsets) as (app, chat):
        await switch_on(app, "notes", "delete_note")
        await chat.send("clean up the old kettle note")
        (card,) = approval_cards(chat)
        message_id = chat.sent_cards[-1].message_id
    assert f"asked by the sub-task “{TASK}”" in card.text
    assert toolsets[0].calls == []

    async def sub_answers(messages: list[Message]) -> Completion:
        assert [m.content for m in messages][:2] == [SUB_PROMPT, TASK]
        return toolkit.answer("deleted the note")

    second = toolkit.ScriptedModel([sub_answers, toolkit.answer("All cleaned up.")])
    again = MemoryChannel(_ids=itertools.count(500))  # update ids the first never used
    async with running_palui(settings, second, again, toolsets=toolsets) as (app, chat):
        await chat.tap(approve(card), message_id=message_id)
        await app.chats.wait_idle(chat.chat_id)
    assert toolsets[0].calls == [("delete_note", {})]
    assert chat.texts()[-1] == "All cleaned up."
    assert results(second.calls[0][0]) == ["saved"]  # the sub-turn got its call's result
    assert results(second.calls[1][0]) == ["deleted the note"]  # the parent got the answer

    out = io.StringIO()
    monkeypatch.setenv("PALUI_DATABASE_URL", settings.resolved_database_url)
    monkeypatch.setenv("PALUI_DATA_DIR", str(settings.data_dir))
    (turn_id,) = {r.turn_id for r in await app.store.runs.recent_runs(5)}
    args = argparse.Namespace(config=None, runs_command="show", turn=turn_id, json=False)
    args.show_json, args.limit = False, 20
    assert await asyncio.to_thread(run_runs, args, out) == 0
    shown = out.getvalue()
    assert "palui__delegate  (call d1)" in shown and f"sub-task      {TASK}" in shown
    assert "↳ notes__delete_note  (call d1/s1, inside call d1)" in shown
    assert shown.index("(call d1)") < shown.index("(call d1/s1")


async def test_the_parents_step_budget_bounds_the_sub_turn(database_url: str, tmp_path) -> None:
    settings = in_memory_settings(database_url, str(tmp_path / "data"), max_steps=4)
    price = toolkit.call("shop__get_price", {}, "s1")
    model = toolkit.ScriptedModel([DELEGATE], forever=price)
    async with running_palui(settings, model, toolsets=[shop()]) as (_app, chat):
        await chat.send("find it")
    assert len(model.calls) == 4  # 1 for the parent, the 3 it had left for the sub-turn
    assert "I stopped after 4 steps" in chat.texts()[-1]
    sub_result = results(model.calls[-1][0])
    assert sub_result == ["the blue kettle costs 42 EUR"] * 2  # its last step ran no tools


async def test_stop_during_a_sub_turn_stops_both(settings: Settings) -> None:
    running, release = asyncio.Event(), asyncio.Event()

    async def slow(**_: Any) -> str:
        running.set()
        await release.wait()
        return "late"

    tools = toolkit.FunctionToolset("shop", {"get_price": slow}, read_only=["get_price"])
    model = toolkit.ScriptedModel(
        [DELEGATE, toolkit.call("shop__get_price", {}, "s1")], forever=toolkit.answer("after")
    )
    async with running_palui(settings, model, toolsets=[tools]) as (app, chat):
        turn = asyncio.create_task(chat.send("find it"))
        await running.wait()
        await chat.command("stop")
        await turn
        assert any(text.startswith("Stopped.") for text in chat.texts())
        assert "shop__get_price was interrupted" in "\n".join(chat.texts())
        assert len(model.calls) == 2  # neither the sub-turn nor the parent asked again
        release.set()
        (run,) = await app.store.runs.recent_runs(1)
        steps = await app.store.runs.steps(run.turn_id)
    assert run.status == TurnStatus.CANCELLED
    ends = {(s.call_id, s.outcome) for s in steps if s.stage == "execute"}
    assert ends == {("d1", "unknown"), ("d1/s1", "unknown")}
