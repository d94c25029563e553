"""What waits for a chat, in one query: the chat worker's look before each round of turns.

A chat's worker used to ask five tables in turn (paused turns, webhook deliveries, job runs,
the inbox, open ✏️ Edits) on every pass, almost always to hear "nothing". One UNION ALL now
returns the inbox's waiting rows, a flag for each other kind that has anything, and the settings
version (so the switches are checked without a lookup of their own); the worker asks a kind's
repository for the details only when its flag is up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, bindparam, cast, exists, literal, null, select, union_all

from palui.db.inbox import claimed_by
from palui.db.memory import outlook_columns
from palui.db.models import (
    ApprovalEdit,
    InboxUpdate,
    JobRun,
    PausedTurn,
    SettingsVersion,
    WebhookDelivery,
)
from palui.db.repo import Repo
from palui.db.settings_version import ROW
from palui.domain import EditStatus, InboxItem, InboxStatus, RunStatus


@dataclass(frozen=True, slots=True)
class Waiting:
    """What the chat's queues hold right now."""

    inbox: tuple[InboxItem, ...] = ()
    paused: bool = False  # a paused turn not yet claimed (it may be resumable)
    webhooks: bool = False  # a delivery not yet handled
    jobs: bool = False  # a queued job run
    edits: bool = False  # an open ✏️ Edit: some messages may answer it
    settings_version: int = 0  # read along, for `palui.tools.switchboard.Switchboard.observe`
    # Memory's outlook, read along (`palui.db.memory.outlook`): session, unsliced, open work.
    memory: tuple[int | None, int, bool] = (None, 0, False)


def _waiting() -> Any:
    """The look, built once (~0.7 ms of CPU a statement saves): the chat is `chat_id`."""
    chat_id = bindparam("chat_id", type_=InboxUpdate.__table__.c.chat_id.type)
    inbox = InboxUpdate.__table__.c
    paused, webhooks = PausedTurn.__table__.c, WebhookDelivery.__table__.c
    jobs, edits = JobRun.__table__.c, ApprovalEdit.__table__.c
    flags = {
        "paused": exists().where(paused.chat_id == chat_id, paused.claimed_at.is_(None)),
        "webhooks": exists().where(webhooks.chat_id == chat_id, webhooks.handled_at.is_(None)),
        "jobs": exists().where(jobs.chat_id == chat_id, jobs.status == RunStatus.QUEUED),
        "edits": exists().where(edits.chat_id == chat_id, edits.status == EditStatus.ASKING),
    }
    session, unsliced, open_work = outlook_columns(chat_id)
    flags["slices"] = open_work
    text = cast(null(), String)
    version = SettingsVersion.__table__.c
    return union_all(
        select(
            literal("inbox", String).label("kind"),
            inbox.update_id.label("update_id"),
            inbox.user_id.label("user_id"),
            inbox.payload.label("payload"),
            claimed_by(inbox.update_id).label("turn_id"),
            inbox.attempts.label("attempts"),
        ).where(inbox.chat_id == chat_id, inbox.status == InboxStatus.PENDING),
        *(
            select(literal(kind, String), null(), null(), text, text, null()).where(flag)
            for kind, flag in flags.items()
        ),
        select(literal("version", String), version.version, null(), text, text, null()).where(
            version.id == ROW
        ),
        select(literal("memory", String), session, unsliced, text, text, null()),
    )


_WAITING = _waiting()


class QueueRepo(Repo):
    async def waiting(self, chat_id: int) -> Waiting:
        async with self._db.session() as s:
            rows = (await s.execute(_WAITING, {"chat_id": chat_id})).all()
        kinds = frozenset(row.kind for row in rows)
        version = next((int(r.update_id) for r in rows if r.kind == "version"), 0)
        memory = next(r for r in rows if r.kind == "memory")
        inbox = sorted(
            (
                InboxItem(
                    r.update_id, chat_id, r.user_id, json.loads(r.payload), r.turn_id, r.attempts
                )
                for r in rows
                if r.kind == "inbox"
            ),
            key=lambda item: item.update_id,
        )
        return Waiting(
            tuple(inbox),
            "paused" in kinds,
            "webhooks" in kinds,
            "jobs" in kinds,
            "edits" in kinds,
            version,
            (memory.update_id, int(memory.user_id or 0), "slices" in kinds),
        )
