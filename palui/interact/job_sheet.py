"""`/jobs`: one card per job of the chat (schedule in words, next run, on/off, last run) with
Pause/Resume and Delete buttons; Delete asks to confirm. Edited in place as the person taps.

Buttons carry `jb:<op>:<token>` (palui.callbacks), the job's random token (16 hex digits), so
the data is short, reveals nothing and can't be guessed; a tap on a card of a deleted job changes
nothing. Every change is saved before the card is redrawn, and the scheduler re-reads the jobs
table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from palui import callbacks
from palui.callbacks import JobButton
from palui.db import Store
from palui.domain import Button, Card, Inbound, JobRecord, RunRecord
from palui.interact.taps import SheetTap
from palui.jobs.control import JobControl
from palui.jobs.view import is_once, last_run_words, next_run, schedule_words, when
from palui.ports import Cards

MAX_PROMPT_SHOWN = 300


class JobSheet:
    def __init__(
        self,
        store: Store,
        channel: Cards,
        *,
        now: Callable[[], datetime],
        jobs_changed: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._store = store
        self._channel = channel
        self._now = now
        # What the taps change, shared with the web console's Jobs page; `jobs_changed` is the
        # scheduler's sync (it re-reads the jobs table).
        self.control = JobControl(store, jobs_changed)

    def card(self, job: JobRecord, last: RunRecord | None) -> Card:
        now = self._now()
        if job.enabled:
            state = "✅ on"
        elif is_once(job) and last is not None:
            state = "✔️ done"
        else:
            state = "⏸ paused"
        prompt = job.prompt
        if len(prompt) > MAX_PROMPT_SHOWN:
            prompt = prompt[:MAX_PROMPT_SHOWN] + "…"
        upcoming = next_run(job, now)
        words = schedule_words(job)
        lines = [
            f"⏰ Job #{job.id}  ·  {state}",
            words[:1].upper() + words[1:],
            f"“{prompt}”",
            f"Next run: {when(upcoming, job.timezone, now) if upcoming else '—'}",
            f"Last run: {last_run_words(last, job.timezone, now)}",
            f"Token cap: {job.daily_token_cap:,} a day",
        ]
        toggle = (
            Button("⏸ Pause", callbacks.job("p", job.token))
            if job.enabled
            else Button("▶️ Resume", callbacks.job("r", job.token))
        )
        buttons: tuple[Button, ...] = (toggle, Button("🗑 Delete", callbacks.job("d", job.token)))
        if not job.enabled and is_once(job) and last is not None:
            buttons = buttons[1:]  # a one-time job that ran can't be resumed
        return Card("\n".join(lines), buttons=buttons)

    async def post(self, chat_id: int, reply_to: int | None = None) -> int:
        """Send the chat's job cards (threaded to `reply_to`, in a group); how many there were."""
        jobs = await self._store.jobs.all(chat_id)
        last = await self._store.jobs.last_runs([job.id for job in jobs])
        for job in jobs:
            card = self.card(job, last.get(job.id))
            await self._channel.send_card(chat_id, card, reply_to=reply_to)
        return len(jobs)

    async def tap(self, inbound: Inbound, button: JobButton) -> SheetTap:
        chat, message = inbound.chat_id, inbound.message_id
        op, token = button.op, button.token
        job = await self._store.jobs.by_token(token)
        if job is None or job.chat_id != chat:
            gone = Card("This job no longer exists.")
            return SheetTap("That job is gone; send /jobs again.", chat, message, gone)
        if op in ("p", "r"):
            switched = await self.control.set_enabled(job, op == "r", by="/jobs")
            updated = switched.job
            if updated is None:
                return SheetTap(switched.refusal or "Nothing changed.", chat, message)
            notice = f"Job #{job.id} {'resumed' if updated.enabled else 'paused'}."
            return SheetTap(notice, chat, message, self.card(updated, await self._last(job)))
        if op == "d":
            ask = Card(
                f"Delete job #{job.id} ({schedule_words(job)})? This can't be undone.",
                buttons=(
                    Button("🗑 Yes, delete", callbacks.job("y", job.token)),
                    Button("Keep it", callbacks.job("n", job.token)),
                ),
            )
            return SheetTap("Delete this job?", chat, message, ask)
        if op == "y":
            await self.control.delete(job, by="/jobs")
            done = Card(f"🗑 Job #{job.id} deleted ({schedule_words(job)}).")
            return SheetTap(f"Job #{job.id} deleted.", chat, message, done)
        if op == "n":
            return SheetTap("Kept.", chat, message, self.card(job, await self._last(job)))
        return SheetTap("This button is not valid.", chat, message)

    async def _last(self, job: JobRecord) -> RunRecord | None:
        return await self.control.last_run(job)
