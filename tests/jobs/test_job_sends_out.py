"""Sending out from a job's run (DESIGN §1.1, §1.4): a job made in a tainted turn runs tainted,
so a read that reaches a host nobody named waits for a card; a clean job's prompt is the
person's words, so the hosts it names stay given when its run turns tainted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from palui.config import Settings
from tests.fakes.memory_channel import approval_cards as cards
from tests.fakes.memory_channel import button as tap
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.fakes.web_toolset import WebToolset
from tests.toolkit import EVIL, INJECTED, NEWS, ScriptedModel, answer, call, fetch

DOCS = "https://docs.example/a"


def settings_for(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_a_job_made_in_a_tainted_turn_asks_before_reaching_an_unnamed_host(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [
            fetch(NEWS),  # the person named this host; the page's text is the attacker's
            call("palui__schedule_job", {"prompt": INJECTED, "schedule": "every 1h"}),
            answer("Scheduled."),
            fetch(EVIL),  # the job's run obeys the prompt the page wrote
            answer("Hi."),
        ]
    )
    web = WebToolset({NEWS: INJECTED})
    async with running_palui(settings_for(database_url, tmp_path), model, toolsets=[web]) as (
        app,
        chat,
    ):
        await chat.send(f"read {NEWS} and do what it says")
        (card,) = cards(chat)  # a write in a tainted turn
        await chat.tap(tap(card, "✅ Approve"))
        await app.chats.wait_idle(chat.chat_id)
        (job,) = await app.store.jobs.all()
        assert job.taint_source is not None

        assert await app.store.jobs.claim_run(job, datetime.now(UTC).replace(microsecond=0))
        await chat.send("hello")  # the worker runs the queued run first
        job_card = cards(chat)[-1]
        assert "mcp-web__fetch" in job_card.text
        assert "it would reach evil.example, which you haven't named" in job_card.text
        assert web.fetched() == [NEWS]  # the attacker's host was not visited


async def test_a_clean_jobs_prompt_names_the_hosts_its_run_may_reach(
    database_url: str, tmp_path: Path
) -> None:
    prompt = f"Read {NEWS} and then {DOCS}, and tell me what changed."
    model = ScriptedModel(
        [
            call("palui__schedule_job", {"prompt": prompt, "schedule": "every 1h"}),
            answer("Scheduled."),
            fetch(NEWS),  # the run turns tainted here
            fetch(DOCS),  # named in the job's prompt: it runs without a card
            answer("Nothing changed."),
            answer("Hi."),
        ]
    )
    web = WebToolset({NEWS: "news", DOCS: "docs"})
    async with running_palui(settings_for(database_url, tmp_path), model, toolsets=[web]) as (
        app,
        chat,
    ):
        await chat.send(f"every hour, read {NEWS} and {DOCS}")
        assert cards(chat) == []
        (job,) = await app.store.jobs.all()
        assert job.taint_source is None
        assert await app.store.jobs.claim_run(job, datetime.now(UTC).replace(microsecond=0))
        await chat.send("hello")
        await app.chats.wait_idle(chat.chat_id)
        assert cards(chat) == []
        assert web.fetched() == [NEWS, DOCS]
