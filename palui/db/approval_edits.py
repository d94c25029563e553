"""Edits of approval cards in progress: one row per person editing a card, question by question
(its lifecycle is `palui.domain.EditStatus`).

Every move is a conditional UPDATE on (status, seq) that bumps `seq`, and the message that caused
it is marked handled in the same transaction: a redelivered answer or a double tap moves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from palui.db.models import ApprovalEdit, ApprovalRow, InboxUpdate, utcnow
from palui.db.repo import Repo
from palui.domain import (
    ApprovalStatus,
    EditConfirmation,
    EditRecord,
    EditStatus,
    InboxStatus,
    NewEdit,
)


def _record(row: ApprovalEdit) -> EditRecord:
    return EditRecord(
        row.id,
        row.token,
        row.approval_id,
        row.card_token,
        row.card_message_id,
        row.chat_id,
        row.user_id,
        row.user_name,
        EditStatus(row.status),
        tuple(json.loads(row.fields)),
        row.position,
        row.arguments,
        row.seq,
        row.message_id,
        row.asked_seq,
        row.started_update_id,
    )


async def _handled(s: AsyncSession, update_id: int | None) -> None:
    """The answer that moved the edit is done with, in the same transaction as the move."""
    if update_id is not None:
        await s.execute(
            update(InboxUpdate)
            .where(InboxUpdate.update_id == update_id)
            .values(status=InboxStatus.DONE, handled_at=utcnow())
        )


class ApprovalEditRepo(Repo):
    async def start(self, new: NewEdit) -> list[EditRecord]:
        """Open an edit; other edits this person had open in the chat are cancelled (returned)."""
        async with self._db.session() as s, s.begin():
            rows = list(
                await s.scalars(
                    select(ApprovalEdit).where(
                        ApprovalEdit.chat_id == new.chat_id,
                        ApprovalEdit.user_id == new.user_id,
                        ApprovalEdit.status == EditStatus.ASKING,
                    )
                )
            )
            for row in rows:
                row.status, row.updated_at = EditStatus.CANCELLED, utcnow()
            s.add(
                ApprovalEdit(
                    id=new.id,
                    token=new.token,
                    approval_id=new.approval_id,
                    card_token=new.card_token,
                    card_message_id=new.card_message_id,
                    chat_id=new.chat_id,
                    user_id=new.user_id,
                    user_name=new.user_name[:128],
                    status=EditStatus.ASKING,
                    fields=json.dumps(list(new.fields)),
                    position=0,
                    seq=0,
                    arguments=new.arguments,
                    started_update_id=new.started_update_id,
                    created_at=utcnow(),
                    updated_at=utcnow(),
                )
            )
            return [_record(row) for row in rows]

    async def active(self, chat_id: int, user_id: int, now: datetime) -> EditRecord | None:
        """The person's open edit in the chat, while its card can still be decided."""
        async with self._db.session() as s:
            row = await s.scalar(
                select(ApprovalEdit)
                .join(ApprovalRow, ApprovalRow.id == ApprovalEdit.approval_id)
                .where(
                    ApprovalEdit.chat_id == chat_id,
                    ApprovalEdit.user_id == user_id,
                    ApprovalEdit.status == EditStatus.ASKING,
                    ApprovalRow.status == ApprovalStatus.PENDING,
                    ApprovalRow.token == ApprovalEdit.card_token,
                    ApprovalRow.expires_at > now,
                )
                .order_by(ApprovalEdit.created_at.desc())
                .limit(1)
            )
        return _record(row) if row else None

    async def by_id(self, edit_id: str) -> EditRecord | None:
        async with self._db.session() as s:
            row = await s.get(ApprovalEdit, edit_id)
        return _record(row) if row else None

    async def by_token(self, token: str) -> EditRecord | None:
        async with self._db.session() as s:
            row = await s.scalar(select(ApprovalEdit).where(ApprovalEdit.token == token))
        return _record(row) if row else None

    async def sent(self, edit_id: str, seq: int, message_id: int) -> bool:
        """The question asked at `seq` went out as `message_id`; False when the edit moved on
        or ended while it was being sent (a quick tap), so that message is stale."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(ApprovalEdit)
                .where(
                    ApprovalEdit.id == edit_id,
                    ApprovalEdit.status == EditStatus.ASKING,
                    ApprovalEdit.seq == seq,
                )
                .values(message_id=message_id, asked_seq=seq, updated_at=utcnow())
            )
        return bool(getattr(result, "rowcount", 0))

    async def move(
        self, edit_id: str, *, seq: int, position: int, arguments: str, update_id: int | None
    ) -> bool:
        """To question `position` (the same one to ask it again); False if stale (`seq` moved)."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(ApprovalEdit)
                .where(
                    ApprovalEdit.id == edit_id,
                    ApprovalEdit.status == EditStatus.ASKING,
                    ApprovalEdit.seq == seq,
                )
                .values(position=position, arguments=arguments, seq=seq + 1, updated_at=utcnow())
            )
            moved = bool(getattr(result, "rowcount", 0))
            if moved:
                await _handled(s, update_id)
        return moved

    async def close(self, edit_id: str, status: str, *, update_id: int | None = None) -> bool:
        """End an open edit (cancelled, unchanged, ended); False when it was no longer open."""
        async with self._db.session() as s, s.begin():
            result = await s.execute(
                update(ApprovalEdit)
                .where(ApprovalEdit.id == edit_id, ApprovalEdit.status == EditStatus.ASKING)
                .values(status=status, updated_at=utcnow())
            )
            await _handled(s, update_id)
        return bool(getattr(result, "rowcount", 0))

    async def confirm(
        self,
        edit: EditRecord,
        *,
        arguments: str,
        digest: str,
        new_token: str,
        now: datetime,
        update_id: int | None,
    ) -> EditConfirmation:
        """Bind the approval to the person's values under a new token (the old card goes stale).

        The model's values are kept beside them (the first time: a re-edit keeps the model's).
        "done"; "stale" (nothing changed) when the edit moved meanwhile; "ended" when the card
        was decided, expired or replaced meanwhile (the edit ends, the answer is used up).
        """
        async with self._db.session() as s, s.begin():
            claimed = await s.execute(
                update(ApprovalEdit)
                .where(
                    ApprovalEdit.id == edit.id,
                    ApprovalEdit.status == EditStatus.ASKING,
                    ApprovalEdit.seq == edit.seq,
                )
                .values(
                    status=EditStatus.DONE, arguments=arguments, seq=edit.seq + 1, updated_at=now
                )
            )
            if not getattr(claimed, "rowcount", 0):
                return EditConfirmation.STALE
            bound = await s.execute(
                update(ApprovalRow)
                .where(
                    ApprovalRow.id == edit.approval_id,
                    ApprovalRow.status == ApprovalStatus.PENDING,
                    ApprovalRow.token == edit.card_token,
                    ApprovalRow.expires_at > now,
                )
                .values(
                    token=new_token,
                    arguments=arguments,
                    digest=digest,
                    message_id=None,
                    model_arguments=func.coalesce(
                        ApprovalRow.model_arguments, ApprovalRow.arguments
                    ),
                    edited_by=edit.user_name,
                    edited_at=now,
                )
            )
            await _handled(s, update_id)
            if not getattr(bound, "rowcount", 0):
                await s.execute(
                    update(ApprovalEdit)
                    .where(ApprovalEdit.id == edit.id)
                    .values(status=EditStatus.ENDED)
                )
                return EditConfirmation.ENDED
        return EditConfirmation.DONE

    async def was_edited(self, card_token: str) -> bool:
        """Whether a card with this token was replaced by an edited one."""
        async with self._db.session() as s:
            return bool(
                await s.scalar(
                    select(
                        exists().where(
                            ApprovalEdit.card_token == card_token,
                            ApprovalEdit.status == EditStatus.DONE,
                        )
                    )
                )
            )

    async def unsent(self) -> list[EditRecord]:
        """Open edits whose current question never went out (a crash or a send failure)."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ApprovalEdit).where(
                    ApprovalEdit.status == EditStatus.ASKING,
                    (ApprovalEdit.asked_seq.is_(None))
                    | (ApprovalEdit.asked_seq != ApprovalEdit.seq),
                )
            )
            return [_record(row) for row in rows]

    async def unsent_edited_cards(self) -> Sequence[str]:
        """Turns with an edited, still pending card that was never posted."""
        async with self._db.session() as s:
            rows = await s.scalars(
                select(ApprovalRow.turn_id)
                .where(
                    ApprovalRow.status == ApprovalStatus.PENDING,
                    ApprovalRow.model_arguments.is_not(None),
                    ApprovalRow.message_id.is_(None),
                )
                .distinct()
            )
            return list(rows)
