"""Jobs: each job of the viewer's chats with its schedule, next and last runs, their outcomes and
token use; pause, resume and delete through `JobControl`, the code `/jobs` uses (saved, then the
scheduler re-reads the jobs table). A job of a chat the viewer is not in is not found."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from palui.domain import JobRecord
from palui.domain.windows import day_start
from palui.jobs.control import JobControl
from palui.jobs.view import is_once, next_run, run_outcome, schedule_words, when
from palui.logs import get_logger
from palui.web.deps import WebDeps
from palui.web.render import render, see_other
from palui.web.viewer import Viewer, viewer_of

log = get_logger("palui.web")

PAGE = "/ui/jobs"
RUNS_SHOWN = 5
# What a change says on the page it returns to: a fixed code in the address, never free text.
NOTICES = {
    "paused": "Job paused.",
    "resumed": "Job resumed.",
    "deleted": "Job deleted.",
    "once": "A one-time job that ran can't be resumed.",
}


@dataclass(frozen=True, slots=True)
class RunView:
    at: str
    outcome: str
    tokens: int
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class JobView:
    job: JobRecord
    state: str  # on · paused · done
    schedule: str
    next_run: str
    runs: list[RunView]
    tokens_today: int
    can_resume: bool


def routes(deps: WebDeps) -> list[web.RouteDef]:
    store = deps.store

    def control() -> JobControl:
        if deps.job_sheet is None:
            raise web.HTTPServiceUnavailable(text="Jobs are not served here.")
        return deps.job_sheet.control

    async def views(viewer: Viewer) -> list[JobView]:
        now = deps.now()
        jobs = [job for job in await store.jobs.all() if job.chat_id in viewer.chat_ids]
        last = await store.jobs.last_runs([job.id for job in jobs])
        today = await store.usage.tokens_by_job(day_start(now), [job.id for job in jobs])
        out = []
        for job in jobs:
            runs = (await store.jobs.runs(job.id))[-RUNS_SHOWN:][::-1]
            tokens = await store.usage.tokens_by_turn([r.turn_id for r in runs if r.turn_id])
            done = not job.enabled and is_once(job) and job.id in last
            upcoming = next_run(job, now)
            out.append(
                JobView(
                    job,
                    "on" if job.enabled else ("done" if done else "paused"),
                    schedule_words(job),
                    when(upcoming, job.timezone, now) if upcoming else "—",
                    [
                        RunView(
                            when(r.scheduled_for, job.timezone, now),
                            run_outcome(r),
                            tokens.get(r.turn_id, 0) if r.turn_id else 0,
                            r.turn_id,
                        )
                        for r in runs
                    ],
                    today.get(job.id, 0),
                    not job.enabled and not done,
                )
            )
        return out

    async def listing(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        notice = NOTICES.get(request.query.get("done", ""))
        return render(request, "jobs.html", nav="jobs", jobs=await views(viewer), notice=notice)

    async def act(request: web.Request) -> web.Response:
        viewer = viewer_of(request)
        try:
            job = await store.jobs.get(int(request.match_info["job_id"]))
        except ValueError:
            job = None
        if job is None or job.chat_id not in viewer.chat_ids:
            return render(request, "not_found.html", status=404)
        action, by = request.match_info["action"], f"web:{viewer.user_id}"
        if action in ("pause", "resume"):
            switched = await control().set_enabled(job, action == "resume", by=by)
            done = "once" if switched.job is None else f"{action}d"
            return see_other(f"{PAGE}?done={done}#job-{job.id}")
        if action == "delete":
            await control().delete(job, by=by)
            return see_other(f"{PAGE}?done=deleted")
        return render(request, "not_found.html", status=404)

    return [
        web.get("/jobs", listing, name="jobs"),
        web.post("/jobs/{job_id}/{action}", act, name="job_action"),
    ]
