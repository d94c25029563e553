"""A chat turn: the person's messages, the session's history and memory, the tools it is offered
for its starting taint, and the answer streamed where the channel can."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Mapping, Sequence

from palui.agent.context import build_context
from palui.agent.turn import run_turn
from palui.domain import ChatKind, Fence, Inbound, TurnKind
from palui.logs import bound, get_logger
from palui.media import with_images
from palui.memory import Recalled
from palui.turns import foreign, words
from palui.turns import taint as starting
from palui.turns.drive import Drive
from palui.turns.left_preview import LeftPreview
from palui.turns.parts import TurnParts

log = get_logger("palui.turns")

RANKING_MESSAGES = 6  # the newest messages rank the tools offered


async def run_chat_turn(
    parts: TurnParts,
    drive: Drive,
    chat_id: int,
    batch: Sequence[Inbound],
    fence: Fence | None = None,
    images: Mapping[str, tuple[str, ...]] | None = None,
) -> None:
    turn_id = uuid.uuid4().hex
    update_ids = [i.update_id for i in batch]
    store = parts.store
    with bound(chat_id=chat_id, turn_id=turn_id):
        latest = batch[-1]
        session_id = await store.chats.current_session(chat_id, latest.chat_kind)
        inputs = [(i.update_id, i.text or "") for i in batch]
        # Someone else's words (a forward, a replied-to message) taint the turn from the start.
        foreign_taint = starting.from_foreign(batch)
        group = latest.chat_kind is not ChatKind.PRIVATE
        left = await store.turns.start(
            turn_id, chat_id, session_id, TurnKind.CHAT, inputs,
            untrusted=foreign.untrusted_rows(batch), taint=foreign_taint,
            requester_id=latest.user.id, reply_to=latest.message_id if group else None,
        )  # fmt: skip
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
        messages = with_images(messages, images or {})  # photos: this turn's calls only
        taint = starting.chat_turn(history, recalled, batch)
        recent = history.messages[-RANKING_MESSAGES:]
        offer = await parts.offers.for_messages(recent, TurnKind.CHAT, taint is not None)
        persons = await words.of_session(store, session_id)
        tools = await parts.tools(offer, turn_id, chat_id, TurnKind.CHAT, taint, persons, fence)
        deps = parts.deps(turn_id, chat_id, tools, fence)
        # In a group the answer is one message threaded to what it answers: no preview edited
        # once a second under the group's 20 messages a minute.
        stream = None if group else parts.channel.streaming_reply(chat_id)
        if stream is None and left is not None:
            # No streaming now (off, or a group), but the answer still replaces what the
            # interrupted run left.
            stream = LeftPreview(parts.channel, chat_id, left)
        elif stream is not None:
            if left is not None:
                stream.adopt(left)  # an interrupted turn's preview: this answer replaces it
            stream.watch_preview(functools.partial(store.turns.record_preview, turn_id))
            deps = dataclasses.replace(deps, on_delta=stream.push)
        log.info("turn_started", messages=len(batch), tools=len(offer.tools))
        await drive(chat_id, turn_id, run_turn(deps, messages), tools, update_ids, stream, fence)
