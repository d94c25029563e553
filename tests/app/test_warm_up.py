"""The start-up warm-up: what the first turn would pay for the first time is paid before Palui
says it serves (Telegram is polled meanwhile: tests/app/test_early_polling.py), and it leaves
nothing behind that anyone can see."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import text

from palui.app.root import Palui
from palui.config import load_settings
from palui.domain import Message, Role
from palui.llm import ModelClient
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import FunctionToolset

SEEN_BY_NOBODY = ("turns", "messages", "recall_checks", "inbox", "outbox", "chat_leases")


def fake_recall(fake_telegram: Any, *, fails: bool = False) -> tuple[FunctionToolset, list[int]]:
    """A recall whose `get_profile` notes how many times Palui had polled when it was asked;
    with `fails`, its first answer is an error."""
    polls_seen: list[int] = []

    async def get_profile(**_: Any) -> str:
        polls_seen.append(sum(r.method == "getUpdates" for r in fake_telegram.requests))
        if fails and len(polls_seen) == 1:
            raise RuntimeError("recall is having a bad day")
        return "Nothing is known about the person yet."

    return FunctionToolset("recall", {"get_profile": get_profile}, read_only=["get_profile"]), (
        polls_seen
    )


@pytest.fixture
async def serve(settings_env: dict[str, str]) -> AsyncIterator[Callable[..., Awaitable[Palui]]]:
    """`await serve(toolsets)`: the daemon in this process against the fakes, with `toolsets`."""
    started: list[tuple[Palui, asyncio.Event, asyncio.Task[None]]] = []

    async def start(*toolsets: Any) -> Palui:
        app = Palui(load_settings(), toolsets=toolsets)
        await app.__aenter__()
        stop = asyncio.Event()
        started.append((app, stop, asyncio.create_task(app.serve_telegram(stop))))
        return app

    yield start
    for app, stop, task in started:
        stop.set()
        await asyncio.wait_for(task, 15)
        await app.__aexit__(None, None, None)


async def row_counts(app: Palui) -> dict[str, int]:
    async with app.db.engine.connect() as connection:
        return {
            table: (await connection.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()
            for table in SEEN_BY_NOBODY
        }


async def test_recall_is_asked_once_before_palui_serves_and_nothing_is_stored(
    serve, fake_telegram, fake_model
) -> None:
    recall, polls_seen = fake_recall(fake_telegram)
    app = await serve(recall)
    await app.serving.wait()

    assert len(polls_seen) == 1  # asked once, before Palui said it serves
    ((tool, arguments),) = recall.calls
    assert tool == "get_profile" and len(arguments["query"].split()) >= 4
    assert fake_model.requests == []  # the model's rehearsal never left the process
    assert await row_counts(app) == dict.fromkeys(SEEN_BY_NOBODY, 0)


async def test_a_failed_warm_up_keeps_nothing_from_starting_and_the_first_turn_answers(
    serve, fake_telegram, fake_model
) -> None:
    recall, polls_seen = fake_recall(fake_telegram, fails=True)
    fake_model.queue(Script(text="Hello, Ana."))
    await serve(recall)

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what do you know about me")
    (reply,) = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert reply["text"] == "Hello, Ana."
    assert len(polls_seen) == 2  # the failed warm-up, then the turn's own auto-recall


@pytest.mark.parametrize("via_litellm", [False, True])
async def test_the_model_rehearsal_sends_nothing_and_the_first_real_call_still_answers(
    fake_model, via_litellm: bool
) -> None:
    model = ModelClient(
        "openai/fake-model",
        api_base=fake_model.api_base,
        api_key="sk-test",
        via_litellm=via_litellm,
    )
    await model.warm_up()
    assert fake_model.requests == []

    fake_model.queue(Script(text="streamed"), Script(text="whole"))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    streamed = await model.complete([Message(Role.USER, "hi")], on_delta=on_delta)
    whole = await model.complete([Message(Role.USER, "hi again")])
    assert (streamed.content, "".join(deltas), whole.content) == ("streamed", "streamed", "whole")
    assert len(fake_model.requests) == 2
    await model.aclose()
