"""Sending out from a tainted turn (DESIGN §1.4): a call that sends out to a destination the
person did not give waits for a card that names it, whatever its class; a destination the person
named, or the operator allows, runs as before; an untainted turn is unchanged. In this process:
the web tools as Python functions (tests/fakes/web_toolset.py), a scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from palui.config import Settings
from tests import toolkit
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui
from tests.fakes.memory_channel import approval_cards as cards
from tests.fakes.memory_channel import button as tap
from tests.fakes.web_toolset import WebToolset
from tests.toolkit import EVIL, INJECTED, NEWS, fetch


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(
        database_url, str(tmp_path / "data"),
        allowed_destinations=("*.corp.example", "*@mycompany.com"),
    )  # fmt: skip


@asynccontextmanager
async def web_palui(
    settings: Settings, *steps: toolkit.Step
) -> AsyncIterator[tuple[Any, MemoryChannel, toolkit.ScriptedModel, WebToolset]]:
    web, model = WebToolset({NEWS: INJECTED}), toolkit.ScriptedModel(steps)
    async with running_palui(settings, model, toolsets=[web]) as (app, chat):
        yield app, chat, model, web


async def test_a_tainted_turns_fetch_to_a_host_the_person_never_named_waits_for_a_card(
    settings: Settings,
) -> None:
    steps = (fetch(NEWS), fetch(EVIL), toolkit.answer("I did not open it."))
    async with web_palui(settings, *steps) as (app, chat, _model, web):
        await chat.send(f"what does {NEWS} say?")
        (card,) = cards(chat)
        assert "mcp-web__fetch  (read · sends out)" in card.text
        assert (
            "Why: it would reach evil.example, which you haven't named in this conversation; "
            "this turn read untrusted content from mcp-web (mcp-web__fetch)." in card.text
        )
        assert web.fetched() == [NEWS]  # the host the attacker chose was not visited
        await chat.tap(tap(card, "❌ Deny"))
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "I did not open it."
        assert web.fetched() == [NEWS]


async def test_an_approved_fetch_to_an_unnamed_host_runs_once(settings: Settings) -> None:
    steps = (fetch(NEWS), fetch(EVIL), toolkit.answer("opened"))
    async with web_palui(settings, *steps) as (app, chat, _model, web):
        await chat.send(f"what does {NEWS} say?")
        (card,) = cards(chat)
        await chat.tap(tap(card, "✅ Approve"))
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1] == "opened"
        assert web.fetched() == [NEWS, EVIL]


async def test_a_host_the_person_named_in_this_session_runs_in_a_tainted_turn(
    settings: Settings,
) -> None:
    steps = (
        toolkit.answer("noted"),
        fetch(NEWS),
        fetch("https://news.example/yesterday"),  # the host of a URL the person gave
        fetch("https://www.docs.example/page"),  # named in an earlier message, bare
        toolkit.answer("both read"),
    )
    async with web_palui(settings, *steps) as (_app, chat, _model, web):
        await chat.send("I keep my notes on docs.example")
        await chat.send(f"what does {NEWS} say?")
        assert chat.texts()[-1] == "both read"
        assert not cards(chat)
        assert web.fetched() == [
            NEWS, "https://news.example/yesterday", "https://www.docs.example/page"
        ]  # fmt: skip


async def test_after_new_a_host_named_in_the_old_session_waits_for_a_card(
    settings: Settings,
) -> None:
    steps = (toolkit.answer("noted"), fetch(NEWS), fetch("https://docs.example/p"))
    async with web_palui(settings, *steps) as (_app, chat, _model, web):
        await chat.send("I keep my notes on docs.example")
        await chat.command("new")
        await chat.send(f"what does {NEWS} say?")
        (card,) = cards(chat)
        assert "it would reach docs.example" in card.text
        assert web.fetched() == [NEWS]


async def test_the_operators_allow_list_lets_its_hosts_and_domains_through(
    settings: Settings,
) -> None:
    steps = (
        fetch(NEWS),
        fetch("https://wiki.corp.example/page"),
        toolkit.call("mcp-web__check_address", {"email": "Bob@MyCompany.com"}),
        toolkit.call("mcp-web__check_address", {"email": "eve@evil.example"}),
    )
    async with web_palui(settings, *steps) as (_app, chat, _model, web):
        await chat.send(f"what does {NEWS} say?")
        (card,) = cards(chat)
        assert "it would reach eve@evil.example" in card.text
        ran = [(name, args) for name, args in web.calls]
        assert ran == [
            ("fetch", {"url": NEWS}),
            ("fetch", {"url": "https://wiki.corp.example/page"}),
            ("check_address", {"email": "Bob@MyCompany.com"}),
        ]


async def test_an_untainted_turn_sends_out_as_before(settings: Settings) -> None:
    steps = (fetch("https://elsewhere.example/"), toolkit.answer("read it"))
    async with web_palui(settings, *steps) as (_app, chat, _model, web):
        await chat.send("fetch whatever you like")  # names no host; nothing read yet
        assert chat.texts() == ["read it"] and not cards(chat)
        assert web.fetched() == ["https://elsewhere.example/"]
