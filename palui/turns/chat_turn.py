"""A chat turn: the person's messages, the session's history and memory, the tools it is offered
for its starting taint, and the answer streamed where the channel can."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Sequence

from palui.agent.context import build_context
from palui.agent.turn import run_turn
from palui.domain import Inbound, TurnKind
from palui.logs import bound, get_logger
from palui.memory import Recalled
from palui.turns import taint as starting
from palui.turns import words
from palui.turns.drive import Drive
from palui.turns.left_preview import LeftPreview
from palui.turns.parts import TurnParts

log = get_logger("palui.turns")

RANKING_MESSAGES = 6  # the newest messages rank the tools offered


async def run_chat_turn(
    parts: TurnParts, drive: Drive, chat_id: int, batch: Sequence[Inbound]
) -> None:
    turn_id = uuid.uuid4().hex
    update_ids = [i.update_id for i in batch]
    store = parts.store
    with bound(chat_id=chat_id, turn_id=turn_id):
        session_id = await store.chats.current_session(chat_id)
        inputs = [(i.update_id, i.text or "") for i in batch]
        left = await store.turns.start(turn_id, chat_id, session_id, TurnKind.CHAT, inputs)
        if parts.memory is not None:
            history = await parts.memory.history(session_id)
            said = " ".join(text for _, text in inputs)
            recalled = await parts.memory.recall(chat_id, turn_id, said)
        else:
            history = await store.chats.history(session_id, parts.limits.history_messages)
            recalled = Recalled()
        messages = build_context(
            history.messages, summary=history.summary, memory=recalled.text, now=parts.now()
        )
        taint = starting.chat_turn(history, recalled)
        recent = history.messages[-RANKING_MESSAGES:]
        offer = await parts.offers.for_messages(recent, TurnKind.CHAT, taint is not None)
        persons = await words.of_session(store, session_id)
        tools = await parts.tools(offer, turn_id, chat_id, TurnKind.CHAT, taint, persons)
        deps = parts.deps(turn_id, chat_id, tools)
        stream = parts.channel.streaming_reply(chat_id)
        if stream is None and left is not None:
            # Streaming is off now, but the answer still replaces what the interrupted run left.
            stream = LeftPreview(parts.channel, chat_id, left)
        elif stream is not None:
            if left is not None:
                stream.adopt(left)  # an interrupted turn's preview: this answer replaces it
            stream.watch_preview(functools.partial(store.turns.record_preview, turn_id))
            deps = dataclasses.replace(deps, on_delta=stream.push)
        log.info("turn_started", messages=len(batch), tools=len(offer.tools))
        await drive(chat_id, turn_id, run_turn(deps, messages), tools, update_ids, stream)
