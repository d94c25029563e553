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

from sqlalchemy import String, cast, exists, literal, null, select, union_all

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


class QueueRepo(Repo):
    async def waiting(self, chat_id: int) -> Waiting:
        flags = {
            "paused": exists().where(
                PausedTurn.chat_id == chat_id, PausedTurn.claimed_at.is_(None)
            ),
            "webhooks": exists().where(
                WebhookDelivery.chat_id == chat_id, WebhookDelivery.handled_at.is_(None)
            ),
            "jobs": exists().where(JobRun.chat_id == chat_id, JobRun.status == RunStatus.QUEUED),
            "edits": exists().where(
                ApprovalEdit.chat_id == chat_id, ApprovalEdit.status == EditStatus.ASKING
            ),
        }
        session, unsliced, open_work = outlook_columns(chat_id)
        flags["slices"] = open_work
        text = cast(null(), String)
        parts = [
            select(
                literal("inbox", String).label("kind"),
                InboxUpdate.update_id.label("update_id"),
                InboxUpdate.user_id.label("user_id"),
                InboxUpdate.payload.label("payload"),
                claimed_by(InboxUpdate.update_id).label("turn_id"),
            ).where(InboxUpdate.chat_id == chat_id, InboxUpdate.status == InboxStatus.PENDING),
            *(
                select(literal(kind, String), null(), null(), text, text).where(flag)
                for kind, flag in flags.items()
            ),
            select(literal("version", String), SettingsVersion.version, null(), text, text).where(
                SettingsVersion.id == ROW
            ),
            select(literal("memory", String), session, unsliced, text, text),
        ]
        async with self._db.session() as s:
            rows = (await s.execute(union_all(*parts))).all()
        kinds = frozenset(row.kind for row in rows)
        version = next((int(r.update_id) for r in rows if r.kind == "version"), 0)
        memory = next(r for r in rows if r.kind == "memory")
        inbox = sorted(
            (
                InboxItem(r.update_id, chat_id, r.user_id, json.loads(r.payload), r.turn_id)
                for r in rows
                if r.kind == "inbox"
            ),
            key=lambda item: item.update_id,
        )
        return Waiting(
            tuple(inbox), "paused" in kinds, "webhooks" in kinds, "jobs" in kinds,
            "edits" in kinds, version,
            (memory.update_id, int(memory.user_id or 0), "slices" in kinds),
        )  # fmt: skip
