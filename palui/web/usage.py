"""Usage: tokens per day against the daily cap and runs per hour against theirs, as charts, per
chat and per job.

Counted as the caps count (`palui.chat.pauses`, `palui.jobs.admission`): the headline numbers are
the caps' own queries (`TurnRepo.tokens_since(day_start)`, `runs_since(hour_ago)`), and the charts'
windows (`palui.db.usage`) end with exactly those windows, so the last bar is what the cap checks.
The caps hold across every chat, so the totals are everyone's; what a chat used is shown only for
the viewer's chats (the rest as one "other chats" line).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from aiohttp import web

from palui.domain import JobRecord
from palui.domain.windows import day_start, days_back, hour_ago, hours_back
from palui.web.charts import Bar, bar_chart, meter
from palui.web.deps import WebDeps
from palui.web.render import render
from palui.web.viewer import Viewer, viewer_of

DAYS = 14
HOURS = 24


@dataclass(frozen=True, slots=True)
class ChatUsage:
    chat_id: int | None  # None: the chats this viewer does not see, together
    label: str
    tokens_today: int
    runs_last_hour: int
    tokens_days: int  # over the chart's days


@dataclass(frozen=True, slots=True)
class JobUsage:
    job: JobRecord
    tokens_today: int
    runs_today: int
    meter: str


def _chosen_chat(request: web.Request, viewer: Viewer) -> int | None:
    raw = request.query.get("chat", "")
    try:
        chat = int(raw)
    except ValueError:
        return None
    return chat if chat in viewer.chat_ids else None


def chat_label(chat_id: int, viewer: Viewer) -> str:
    return f"{chat_id} (your private chat)" if chat_id == viewer.user_id else str(chat_id)


def token_chart(starts: list[datetime], tokens: list[int], cap: int, scope: str) -> str:
    bars = [
        Bar(
            "today" if n == len(starts) - 1 else f"{start:%a} {start.day}",
            value,
            f"{start:%a} {start.day} {start:%b} (UTC): {value:,} tokens",
        )
        for n, (start, value) in enumerate(zip(starts, tokens, strict=True))
    ]
    cap_words = f"the daily cap is {cap:,}" if cap else "no daily cap is set"
    return bar_chart(
        bars,
        title=f"Tokens per day, {scope}",
        description=f"Tokens used on each of the last {len(starts)} UTC days; today "
        f"{tokens[-1]:,}; {cap_words}.",
        x_label="day (UTC)",
        y_label="tokens",
        cap=cap,
        cap_label="daily cap (all chats)",
        chart_id="tokens-chart",
    )


def runs_chart(starts: list[datetime], runs: list[int], cap: int, scope: str, now: datetime) -> str:
    bars = []
    for n, (start, value) in enumerate(zip(starts, runs, strict=True)):
        end = starts[n + 1] if n + 1 < len(starts) else now
        label = "now" if n == len(starts) - 1 else f"{end:%H:%M}"
        bars.append(Bar(label, value, f"{start:%H:%M}–{end:%H:%M} UTC: {value} runs"))
    cap_words = f"the cap is {cap} an hour" if cap else "no hourly cap is set"
    return bar_chart(
        bars,
        title=f"Runs per hour, {scope}",
        description=f"Turns started in each of the last {len(starts)} hours; in the last hour "
        f"{runs[-1]}; {cap_words}.",
        x_label="hour ending at (UTC)",
        y_label="runs",
        cap=cap,
        cap_label="runs per hour cap (all chats)",
        chart_id="runs-chart",
    )


def _in(delta: timedelta) -> str:
    minutes = max(int(delta.total_seconds() // 60), 1)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def routes(deps: WebDeps) -> list[web.RouteDef]:
    store = deps.store

    async def usage(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        now = deps.now()
        chosen = _chosen_chat(request, viewer)
        scope = None if chosen is None else [chosen]
        scope_words = "all chats" if chosen is None else f"chat {chat_label(chosen, viewer)}"
        today, hour = day_start(now), hour_ago(now)
        days, hours = days_back(now, DAYS), hours_back(now, HOURS)
        tokens = await store.usage.tokens_in(days, scope)
        runs = await store.usage.runs_in(hours, scope)
        # The caps' own counts: what the next turn is checked against.
        tokens_today = await store.turns.tokens_since(today)
        runs_hour = await store.turns.runs_since(hour)
        oldest = await store.turns.oldest_run_since(hour)
        chats = await _chats(deps, viewer, today, hour, days[0])
        jobs = await _jobs(deps, viewer, today)
        return render(
            request,
            "usage.html",
            nav="usage",
            chosen=chosen,
            scope_words=scope_words,
            daily_cap=deps.daily_token_cap,
            runs_cap=deps.runs_per_hour,
            tokens_today=tokens_today,
            runs_hour=runs_hour,
            resets_in=_in(today + timedelta(days=1) - now),
            frees_at=(oldest + timedelta(hours=1)) if oldest else None,
            token_meter=meter(
                tokens_today,
                deps.daily_token_cap,
                title=f"{tokens_today:,} of {deps.daily_token_cap:,} tokens today",
                width=240,
            ),
            runs_meter=meter(
                runs_hour,
                deps.runs_per_hour,
                title=f"{runs_hour} of {deps.runs_per_hour} runs in the last hour",
                width=240,
            ),
            token_chart=token_chart(days, tokens, deps.daily_token_cap, scope_words),
            runs_chart=runs_chart(hours, runs, deps.runs_per_hour, scope_words, now),
            chats=chats,
            jobs=jobs,
            days=DAYS,
        )

    return [web.get("/usage", usage, name="usage")]


async def _chats(
    deps: WebDeps, viewer: Viewer, today: datetime, hour: datetime, first_day: datetime
) -> list[ChatUsage]:
    usage = deps.store.usage
    today_tokens = await usage.tokens_by_chat(today)
    hour_runs = await usage.runs_by_chat(hour)
    days_tokens = await usage.tokens_by_chat(first_day)
    rows = [
        ChatUsage(
            chat,
            chat_label(chat, viewer),
            today_tokens.get(chat, 0),
            hour_runs.get(chat, 0),
            days_tokens.get(chat, 0),
        )
        for chat in sorted(viewer.chat_ids)
    ]

    def others(counts: dict[int | None, int] | dict[int, int]) -> int:
        return sum(n for chat, n in counts.items() if chat not in viewer.chat_ids)

    rest = ChatUsage(
        None, "other chats", others(today_tokens), others(hour_runs), others(days_tokens)
    )
    if rest.tokens_today or rest.runs_last_hour or rest.tokens_days:
        rows.append(rest)
    return rows


async def _jobs(deps: WebDeps, viewer: Viewer, today: datetime) -> list[JobUsage]:
    jobs = [job for job in await deps.store.jobs.all() if job.chat_id in viewer.chat_ids]
    ids = [job.id for job in jobs]
    tokens = await deps.store.usage.tokens_by_job(today, ids)
    runs = await deps.store.usage.runs_by_job(today, ids)
    rows = []
    for job in jobs:
        used = tokens.get(job.id, 0)
        words = f"job #{job.id}: {used:,} of {job.daily_token_cap:,} tokens today"
        rows.append(
            JobUsage(job, used, runs.get(job.id, 0), meter(used, job.daily_token_cap, title=words))
        )
    return rows
