"""A chat turn: the person's messages, the session's history and memory, the tools it is offered
for its starting taint, and the answer streamed where the channel can."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid
from collections.abc import Sequence

from palui.agent.context import build_context
from palui.agent.turn import run_turn
from palui.db.riders import Riders
from palui.domain import Inbound, TurnKind
from palui.logs import bound, get_logger
from palui.memory import Recalled
from palui.turns import taint as starting
from palui.turns import words
from palui.turns.drive import Drive
from palui.turns.parts import TurnParts

log = get_logger("palui.turns")

RANKING_MESSAGES = 6  # the newest messages rank the tools offered


async def run_chat_turn(
    parts: TurnParts, drive: Drive, chat_id: int, batch: Sequence[Inbound], *, rerun: bool = True
) -> None:
    """`rerun=False`: no earlier turn took these messages (the worker knows from the inbox),
    so there is no interrupted turn's preview to look for."""
    turn_id = uuid.uuid4().hex
    store = parts.store
    # What the turn owes the database besides its own rows (token usage, the recall check):
    # written with its next transaction (palui.db.riders).
    riders = Riders()
    with bound(chat_id=chat_id, turn_id=turn_id):
        inputs = [(i.update_id, i.text or "") for i in batch]
        # One transaction: the chat's session, the turn, the person's messages, the inbox claim.
        session_id, left = await store.turns.start_chat_turn(turn_id, chat_id, inputs, rerun=rerun)
        try:
            await _run(parts, drive, chat_id, turn_id, session_id, left, inputs, riders)
        finally:
            if riders:  # the turn stopped before any write could carry them (a shutdown)
                await asyncio.shield(store.turns.write_riders(riders))


async def _run(
    parts: TurnParts,
    drive: Drive,
    chat_id: int,
    turn_id: str,
    session_id: int,
    left: int | None,
    inputs: Sequence[tuple[int, str]],
    riders: Riders,
) -> None:
    store = parts.store
    if parts.memory is not None:
        history = await parts.memory.history(session_id)
        said = " ".join(text for _, text in inputs)
        recalled = await parts.memory.recall(chat_id, turn_id, said, riders)
    else:
        history = await store.chats.history(session_id, parts.limits.history_messages)
        recalled = Recalled()
    messages = build_context(
        history.messages, summary=history.summary, memory=recalled.text, now=parts.now()
    )
    taint = starting.chat_turn(history, recalled)
    recent = history.messages[-RANKING_MESSAGES:]
    offer = await parts.offers.for_messages(recent, TurnKind.CHAT, taint is not None)
    persons = functools.partial(words.of_session, store, session_id)  # read if a call needs it
    tools = await parts.tools(offer, turn_id, chat_id, TurnKind.CHAT, taint, persons, riders=riders)
    deps = parts.deps(turn_id, chat_id, tools)
    stream = parts.channel.streaming_reply(chat_id)
    if stream is not None:
        if left is not None:
            stream.adopt(left)  # an interrupted turn's preview: this answer replaces it
        stream.watch_preview(functools.partial(store.turns.record_preview, turn_id))
        deps = dataclasses.replace(deps, on_delta=stream.push)
    log.info("turn_started", messages=len(inputs), tools=len(offer.tools))
    update_ids = [update_id for update_id, _ in inputs]
    await drive(chat_id, turn_id, run_turn(deps, messages), tools, update_ids, stream)
