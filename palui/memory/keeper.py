"""Compaction and auto-save, run in the chat's worker before each round of turns (and for /new).

Crash-safe and idempotent: a slice of the session (a message id range) is fixed in the database
before anything is done with it, so a retry after a crash handles the same messages again. The
summary and the slice's "summarised" mark are written in one transaction; each saved memory
carries a source id built from the session and its message range, which recall stores once.
Nothing here ever deletes a message: the summary only decides what the next context shows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from palui.agent.autosave import memory_items
from palui.agent.compaction import Transcribed, plan, summarise, summary_tainted
from palui.db import Store
from palui.domain import (
    Completion,
    ConnectorState,
    Role,
    SaveState,
    SliceMessage,
    SliceReason,
    SliceRecord,
)
from palui.logs import get_logger
from palui.ports import ChatModel, Toolset

log = get_logger("palui.memory")

SAVE_BUDGET_S = 20.0  # one slice's saves; past it the slice is tried again later
# A failed save waits this long before the worker tries it again between turns (a hanging
# recall must not hold up every answer); /new tries at once.
RETRY_FAILED_AFTER = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class SaveResult:
    ok: bool
    saved: int = 0
    reason: str | None = None  # why it failed


def transcribed(message: SliceMessage) -> Transcribed:
    return Transcribed(
        message.id,
        Role(message.role),
        message.content,
        message.turn_id,
        message.tainted,
        message.finished,
    )


class Keeper:
    def __init__(
        self,
        store: Store,
        model: ChatModel,
        *,
        compact_after: int,
        keep: int,
        recall: Callable[[], Toolset | None],  # the recall toolset when saving is on, else None
        saving: Callable[[], bool],
    ) -> None:
        self._store = store
        self._model = model
        self._compact_after = compact_after
        self._keep = keep
        self._recall = recall
        self._saving = saving

    async def maintain(
        self, chat_id: int, outlook: tuple[int | None, int, bool] | None = None
    ) -> None:
        """Compact the chat's session if it has grown too long; finish any slice left undone
        (a crash, recall or the model down). Never raises: the next turn must go on."""
        try:
            # One read in the usual case: a session short enough, and nothing left undone.
            # `outlook`: the chat worker read it along with its queues (palui.db.queues).
            if outlook is None:
                outlook = await self._store.memory.outlook(chat_id)
            session_id, unsliced, open_work = outlook
            if session_id is None or (unsliced <= self._compact_after and not open_work):
                return
            slices = await self._store.memory.open_slices(chat_id)
            compacting = any(
                s.session_id == session_id
                and s.reason == SliceReason.COMPACTION
                and not s.summarised
                for s in slices
            )
            if not compacting:
                ids = await self._store.memory.unsliced_ids(session_id)
                span = plan(ids, self._compact_after, self._keep)
                if span is not None:
                    state = SaveState.PENDING if self._saving() else SaveState.OFF
                    await self._store.memory.plan_slice(
                        chat_id, session_id, *span, SliceReason.COMPACTION, state
                    )
                    log.info("compaction_planned", first=span[0], last=span[1])
                    slices = await self._store.memory.open_slices(chat_id)
            for record in slices:
                if record.reason == SliceReason.COMPACTION and not record.summarised:
                    await self._summarise(chat_id, record)
                due = record.updated_at <= datetime.now(UTC) - RETRY_FAILED_AFTER
                if record.save_state == SaveState.PENDING or (
                    record.save_state == SaveState.FAILED and due
                ):
                    await self.save(record)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("memory_maintenance_failed", chat_id=chat_id)

    async def _summarise(self, chat_id: int, record: SliceRecord) -> None:
        messages = [transcribed(m) for m in await self._store.memory.slice_messages(record)]
        previous = await self._store.chats.history(record.session_id, 0)

        async def record_usage(completion: Completion, latency_s: float) -> None:
            await self._store.turns.record_model_call(None, chat_id, completion, latency_s)

        try:
            text = await summarise(self._model, previous.summary, messages, record_usage)
        except Exception as exc:
            log.warning("compaction_failed", error=str(exc) or repr(exc))
            return  # the slice stays unsummarised: tried again after the next turn
        tainted = summary_tainted(previous.summary_tainted, messages)
        if await self._store.memory.commit_summary(record.id, text, tainted):
            log.info("session_compacted", messages=len(messages), tainted=tainted)

    async def plan_rest(self, chat_id: int) -> None:
        """/new: fix the session's messages not yet in a slice as one slice to save."""
        session_id = await self._store.chats.current_session(chat_id)
        # Another slice may be planned at the same moment (compaction): plan what is left.
        for _ in range(3):
            ids = await self._store.memory.unsliced_ids(session_id)
            if not ids:
                return
            first, last = ids[0], ids[-1]
            await self._store.memory.plan_slice(
                chat_id, session_id, first, last, SliceReason.NEW, SaveState.PENDING
            )

    async def save_open(self, chat_id: int) -> SaveResult:
        """Save every slice of the chat whose save is not done yet."""
        total = 0
        for record in await self._store.memory.open_slices(chat_id):
            if record.save_state not in (SaveState.PENDING, SaveState.FAILED):
                continue
            result = await self.save(record)
            if not result.ok:
                return result
            total += result.saved
        return SaveResult(True, total)

    async def save(self, record: SliceRecord) -> SaveResult:
        """Store the slice's memories in recall (one per turn that may be saved)."""
        if not self._saving():
            await self._store.memory.set_save_state([record.id], SaveState.OFF)
            return SaveResult(True)
        toolset = self._recall()
        if toolset is None or toolset.status().state is not ConnectorState.CONNECTED:
            reason = "recall is not connected"
            await self._store.memory.set_save_state([record.id], SaveState.FAILED, error=reason)
            return SaveResult(False, reason=reason)
        messages = [transcribed(m) for m in await self._store.memory.slice_messages(record)]
        items = memory_items(record.session_id, messages)
        saved = 0
        try:
            async with asyncio.timeout(SAVE_BUDGET_S):
                for item in items:
                    arguments = {
                        "content": item.content,
                        "source_id": item.source_id,
                        "tags": list(item.tags),
                    }
                    outcome = await toolset.call("add_memory", arguments)
                    if outcome.is_error:
                        raise RuntimeError(outcome.text[:200])
                    saved += 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            reason = "recall did not answer in time" if isinstance(exc, TimeoutError) else str(exc)
            log.warning("auto_save_failed", slice=record.id, error=reason)
            await self._store.memory.set_save_state(
                [record.id], SaveState.FAILED, saved=saved, error=reason
            )
            return SaveResult(False, saved, reason)
        await self._store.memory.set_save_state([record.id], SaveState.SAVED, saved=saved)
        log.info("auto_saved", slice=record.id, memories=saved)
        return SaveResult(True, saved)
