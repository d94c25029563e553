"""The web console's Jobs page: schedule, next and last runs with their outcomes and tokens;
pause, resume and delete as /jobs does them; a job of another chat can't be seen or changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from palui.config import Settings
from palui.interact.job_sheet import JobSheet
from palui.web.viewer import Viewer
from tests import toolkit
from tests.fakes.browser import Shots, browser, shots  # noqa: F401 (fixtures)
from tests.fakes.memory_channel import MemoryChannel, in_memory_settings, running_palui
from tests.fakes.usage_rows import add_turn
from tests.fakes.web_console import console_with_viewer, link_in, signed_in, web_deps

NOW = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
MINE, THEIRS = 1001, 2002


async def follow(page: Any, selector: str) -> None:
    """Click what leads to another page, and wait until that page has loaded."""
    async with page.expect_navigation():
        await page.click(selector)


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_the_page_shows_runs_outcomes_and_tokens_of_the_viewers_jobs_only(store) -> None:
    anchor = NOW - timedelta(hours=5)
    job = await store.jobs.create(
        MINE, "summarise the news", "every 1h", "UTC", 5_000, "ana", anchor
    )
    hidden = await store.jobs.create(
        THEIRS, "their secret job", "every 1h", "UTC", 5_000, "bo", anchor
    )
    turn = await add_turn(store, MINE, NOW - timedelta(hours=1), 1_234, job_id=job.id)
    await add_turn(store, THEIRS, NOW - timedelta(hours=1), 50, job_id=hidden.id)
    changed: list[str] = []

    async def jobs_changed() -> None:
        changed.append("sync")

    chat = MemoryChannel()
    sheet = JobSheet(store, chat, now=lambda: NOW, jobs_changed=jobs_changed)
    deps = web_deps(store, allowed_users=frozenset({MINE}), now=lambda: NOW, job_sheet=sheet)
    app = console_with_viewer(deps, Viewer(MINE, frozenset({MINE}), "csrf"))
    async with TestClient(TestServer(app)) as client:
        page = await (await client.get("/ui/jobs")).text()
        assert "summarise the news" in page and "every hour" in page.lower()
        assert "their secret job" not in page and f"#{hidden.id}" not in page
        assert "1,234" in page and turn[:8] in page and "done" in page
        assert "Next run" in page and "today 16:30" in page

        # Another chat's job: not found, and nothing changes.
        for action in ("pause", "resume", "delete"):
            answer = await client.post(f"/ui/jobs/{hidden.id}/{action}", data={"csrf": "csrf"})
            assert answer.status == 404
        assert await store.jobs.get(hidden.id) == hidden and changed == []

        answer = await client.post(
            f"/ui/jobs/{job.id}/pause", data={"csrf": "csrf"}, allow_redirects=False
        )
        where = f"/ui/jobs?done=paused#job-{job.id}"
        assert answer.status == 303 and answer.headers["Location"] == where
        paused = await store.jobs.get(job.id)
        assert paused is not None and not paused.enabled and changed == ["sync"]
        page = await (await client.get("/ui/jobs?done=paused")).text()
        assert "⏸ paused" in page and "▶️ Resume" in page and "Job paused." in page
        # The chat's card says the same.
        assert "⏸ paused" in sheet.card(paused, None).text

        await client.post(f"/ui/jobs/{job.id}/resume", data={"csrf": "csrf"})
        resumed = await store.jobs.get(job.id)
        assert resumed is not None and resumed.enabled

        await client.post(f"/ui/jobs/{job.id}/delete", data={"csrf": "csrf"})
        assert await store.jobs.get(job.id) is None and len(changed) == 3
        assert "summarise the news" not in await (await client.get("/ui/jobs")).text()


async def test_a_one_time_job_that_ran_cant_be_resumed_on_the_web(store) -> None:
    at = NOW - timedelta(hours=1)
    job = await store.jobs.create(MINE, "remind me", at.isoformat(), "UTC", 5_000, "a", at)
    assert await store.jobs.claim_run(job, at, finish_job=True)
    sheet = JobSheet(store, MemoryChannel(), now=lambda: NOW)
    deps = web_deps(store, allowed_users=frozenset({MINE}), now=lambda: NOW, job_sheet=sheet)
    app = console_with_viewer(deps, Viewer(MINE, frozenset({MINE}), "csrf"))
    async with TestClient(TestServer(app)) as client:
        page = await (await client.get("/ui/jobs")).text()
        assert "✔️ done" in page and "Resume" not in page
        answer = await client.post(f"/ui/jobs/{job.id}/resume", data={"csrf": "csrf"})
        assert "be resumed." in await answer.text()  # said on the page it returns to
    done = await store.jobs.get(job.id)
    assert done is not None and not done.enabled


async def test_pausing_on_the_web_needs_the_session_and_its_csrf_token(settings) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with (
        running_palui(settings, model) as (app, chat),
        signed_in(app, chat) as web,
    ):
        job = await app.store.jobs.create(
            chat.chat_id, "tick", "every 1h", "UTC", 5_000, "ana", datetime.now(UTC)
        )
        await web.get("/ui/jobs")
        assert (await web.post(f"/ui/jobs/{job.id}/pause", csrf=False)).status == 403
        assert (await app.store.jobs.get(job.id)).enabled  # type: ignore[union-attr]
        assert (await web.post(f"/ui/jobs/{job.id}/pause")).status == 303
        assert not (await app.store.jobs.get(job.id)).enabled  # type: ignore[union-attr]
        await chat.command("jobs")
        assert "⏸ paused" in chat.sent_cards[-1].card.text


async def test_in_chromium_pause_and_delete_a_job(
    settings: Settings,
    browser: Any,  # noqa: F811
    shots: Shots,  # noqa: F811
) -> None:
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok"))
    async with running_palui(settings, model) as (app, chat):
        now = datetime.now(UTC)
        news = await app.store.jobs.create(
            chat.chat_id, "Summarise the morning news in five bullet points", "0 8 * * *",
            "Europe/Lisbon", 50_000, "@ana", now - timedelta(days=3),
        )  # fmt: skip
        for days in (2, 1):
            at = now - timedelta(days=days)
            await add_turn(app.store, chat.chat_id, at, 3_400 + days, job_id=news.id)
        tick = await app.store.jobs.create(
            chat.chat_id, "Check the build status", "every 2h", "UTC", 10_000, "@ana", now
        )
        await chat.command("web")
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto(link_in(chat))
        await follow(page, 'button:has-text("Sign in")')
        await follow(page, "nav >> text=Jobs")
        await shots.shoot(page, "jobs")
        card = await page.inner_text(f"#job-{news.id}")
        assert "3,402" in card and "3,401" in card and "done" in card
        await follow(page, f"#job-{tick.id} >> text=Pause")
        paused = await app.store.jobs.get(tick.id)
        assert paused is not None and not paused.enabled
        assert "⏸ paused" in await page.inner_text(f"#job-{tick.id}")
        assert await page.inner_text(".flash") == "Job paused."
        await page.click(f"#job-{tick.id} summary")
        await follow(page, f"#job-{tick.id} >> text=Yes, delete")
        assert await app.store.jobs.get(tick.id) is None
        assert await page.locator(f"#job-{tick.id}").count() == 0
        await context.close()
