"""The web console's Usage page: its charts count as the caps count (checked against the
database), per chat only for the viewer's chats, and the charts are drawn on the server."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from palui.chat.caps import CapCounts, Caps, cap_hit
from palui.domain.windows import day_start, days_back, hour_ago, hours_back
from palui.web.charts import Bar, bar_chart, meter, nice_step, short_number
from palui.web.viewer import Viewer
from tests import toolkit
from tests.fakes.browser import Shots, browser, shots  # noqa: F401 (fixtures)
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.fakes.usage_rows import add_turn
from tests.fakes.web_console import console_with_viewer, link_in, web_deps

NOW = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
MINE, THEIRS = 1001, 2002


async def seed(store) -> None:
    today = day_start(NOW)
    await add_turn(store, MINE, today, 100)  # the first instant of today counts today
    await add_turn(store, MINE, today - timedelta(microseconds=1), 7_000)  # yesterday
    await add_turn(store, MINE, today + timedelta(hours=10), 1_000)
    await add_turn(store, MINE, NOW - timedelta(minutes=20), 500)  # in the last hour
    await add_turn(store, THEIRS, today + timedelta(hours=12), 3_000)
    await add_turn(store, THEIRS, NOW - timedelta(minutes=5), 200)
    await add_turn(store, MINE, today - timedelta(days=3), 40_000)
    await add_turn(store, MINE, today - timedelta(days=30), 99_999)  # before the chart
    await add_turn(store, MINE, NOW - timedelta(hours=1, seconds=1), 0)  # just out of the hour


def values(page: str, chart: str) -> list[int]:
    svg = re.search(rf'<svg[^>]*id="{chart}".*?</svg>', page, re.S)
    assert svg is not None, chart
    return [int(v) for v in re.findall(r'<rect class="bar[^"]*"[^>]*data-value="(\d+)"', svg[0])]


def cap_of(page: str, chart: str) -> int | None:
    svg = re.search(rf'<svg[^>]*id="{chart}".*?</svg>', page, re.S)
    assert svg is not None
    found = re.search(r'class="cap"[^>]*data-cap="(\d+)"', svg[0])
    return int(found[1]) if found else None


async def test_the_windows_count_what_the_caps_count(store) -> None:
    await seed(store)
    days, hours = days_back(NOW, 14), hours_back(NOW, 24)
    tokens = await store.usage.tokens_in(days)
    runs = await store.usage.runs_in(hours)
    assert tokens[-1] == await store.turns.tokens_since(day_start(NOW)) == 4_800
    assert runs[-1] == await store.turns.runs_since(hour_ago(NOW)) == 2
    assert tokens[-2] == 7_000 and tokens[-4] == 40_000 and sum(tokens) == 51_800
    assert sum(runs) == 7  # every turn of the last 24 hours, each in one window
    assert (await store.usage.tokens_in(days, [MINE]))[-1] == 1_600
    assert await store.usage.tokens_by_chat(day_start(NOW)) == {MINE: 1_600, THEIRS: 3_200}
    assert await store.usage.runs_by_chat(hour_ago(NOW)) == {MINE: 1, THEIRS: 1}
    assert await store.usage.tokens_in(days_back(NOW, 1)) == [4_800]


async def test_a_jobs_usage_is_its_runs_turns(store) -> None:
    job = await store.jobs.create(MINE, "news", "every 1h", "UTC", 5_000, "ana", NOW)
    await add_turn(store, MINE, NOW - timedelta(hours=2), 1_200, job_id=job.id)
    await add_turn(store, MINE, day_start(NOW) - timedelta(hours=1), 900, job_id=job.id)
    await add_turn(store, MINE, NOW - timedelta(hours=3), 50)  # a chat turn, not the job's
    since = day_start(NOW)
    used = await store.usage.tokens_by_job(since, [job.id])
    assert used == {job.id: 1_200} == {job.id: await store.jobs.tokens_since(job.id, since)}
    assert await store.usage.runs_by_job(since, [job.id]) == {job.id: 1}


async def test_the_usage_page_shows_todays_tokens_against_the_cap(store) -> None:
    await seed(store)
    deps = web_deps(
        store, allowed_users=frozenset({MINE}), now=lambda: NOW, daily_token_cap=5_000,
        runs_per_hour=2,
    )  # fmt: skip
    app = console_with_viewer(deps, Viewer(MINE, frozenset({MINE}), "csrf"))
    async with TestClient(TestServer(app)) as client:
        answer = await client.get("/ui/usage")
        assert answer.status == 200
        page = await answer.text()
    today = await store.turns.tokens_since(day_start(NOW))
    assert values(page, "tokens-chart")[-1] == today
    assert cap_of(page, "tokens-chart") == 5_000
    assert values(page, "runs-chart")[-1] == await store.turns.runs_since(hour_ago(NOW))
    assert cap_of(page, "runs-chart") == 2
    assert f'<span class="value">{today:,}</span>' in page
    # What the cap says matches what the page says: two runs in the hour, the cap is hit.
    counts = CapCounts(today, 2, None)
    assert cap_hit(Caps(5_000, 2), counts, NOW) is not None
    assert "Paused: next run possible at" in page
    # Per chat: the viewer's chat by itself, the rest together, no other chat's id.
    by_chat = page[page.index('id="by-chat"') :]
    assert "1,600" in by_chat and "other chats" in by_chat and str(THEIRS) not in page
    assert "<title" in page and "day (UTC)" in page  # an accessible, labelled chart


async def test_charts_for_one_chat_and_never_for_anothers(store) -> None:
    await seed(store)
    deps = web_deps(store, allowed_users=frozenset({MINE}), now=lambda: NOW, daily_token_cap=0)
    app = console_with_viewer(deps, Viewer(MINE, frozenset({MINE}), "csrf"))
    async with TestClient(TestServer(app)) as client:
        mine = await (await client.get(f"/ui/usage?chat={MINE}")).text()
        theirs = await (await client.get(f"/ui/usage?chat={THEIRS}")).text()
    assert values(mine, "tokens-chart")[-1] == 1_600
    assert cap_of(mine, "tokens-chart") is None and "(no cap)" in mine
    # Asking for a chat the viewer is not in shows all chats' totals, not that chat's.
    assert values(theirs, "tokens-chart")[-1] == 4_800 and str(THEIRS) not in theirs


def test_a_chart_is_escaped_and_marks_bars_at_the_cap() -> None:
    bars = [Bar("<b>", 5, "a & b"), Bar("today", 12, "x")]
    svg = bar_chart(
        bars, title="T<script>", description="d", x_label="day", y_label="n", cap=10,
        cap_label="cap",
    )  # fmt: skip
    assert "<script>" not in svg and "T&lt;script&gt;" in svg and "&lt;b&gt;" in svg
    assert svg.count('class="bar over"') == 1 and 'data-cap="10"' in svg
    assert "<title" in svg and 'role="img"' in svg
    assert 'class="cap"' not in bar_chart(
        bars, title="t", description="d", x_label="x", y_label="y"
    )
    assert 'data-value="3"' in meter(3, 0, title="<x>") and "&lt;x&gt;" in meter(3, 4, title="<x>")


def test_axis_numbers_are_round() -> None:
    assert [nice_step(n) for n in (0, 4, 9, 210_000, 2_100_000)] == [1, 1, 5, 100_000, 1_000_000]
    assert [short_number(n) for n in (12, 1_500, 200_000, 2_000_000)] == [
        "12",
        "1.5k",
        "200k",
        "2M",
    ]


async def test_in_chromium_the_chart_shows_todays_tokens_against_the_cap(
    database_url: str,
    tmp_path: Path,
    browser: Any,  # noqa: F811
    shots: Shots,  # noqa: F811
) -> None:
    settings = in_memory_settings(
        database_url, str(tmp_path / "data"), daily_token_cap=20_000, runs_per_hour=10
    )
    model = toolkit.ScriptedModel(forever=toolkit.answer("ok", usage=(1_500, 500)))
    async with running_palui(settings, model) as (app, chat):
        now = datetime.now(UTC)
        for days, tokens in enumerate([0, 12_000, 18_500, 4_000, 22_000, 9_000, 15_000]):
            if tokens:  # earlier days, for a chart worth looking at
                at = day_start(now) - timedelta(days=days) + timedelta(hours=9)
                await add_turn(app.store, chat.chat_id, at, tokens)
        for text in ("hi", "what's on today?", "thanks"):
            await chat.send(text)
        await chat.command("web")
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        page = await context.new_page()
        await page.goto(link_in(chat))
        async with page.expect_navigation():
            await page.click('button:has-text("Sign in")')
        async with page.expect_navigation():
            await page.click("nav >> text=Usage")
        await shots.shoot(page, "usage")
        today = await app.store.turns.tokens_since(day_start(datetime.now(UTC)))
        assert today == 6_000  # three turns of 2,000
        bars = page.locator("svg#tokens-chart rect.bar")
        assert await bars.last.get_attribute("data-value") == str(today)
        cap = page.locator("svg#tokens-chart line.cap[data-cap]")
        assert await cap.get_attribute("data-cap") == "20000"
        shown = await page.inner_text("#tokens-today")
        assert "6,000" in shown and "20,000" in shown
        assert await page.locator("svg#runs-chart rect.bar").last.get_attribute("data-value") == "3"
        await context.close()
