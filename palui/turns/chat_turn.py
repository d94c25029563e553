"""A chat turn: the person's messages, the session's history and memory, the tools it is offered
for its starting taint, and the answer streamed where the channel can."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid
from collections.abc import Mapping, Sequence

from palui.agent.context import build_context
from palui.agent.turn import run_turn
from palui.connectors.elicitation import ASKING, Asking
from palui.db.riders import Riders
from palui.db.turns import Ended
from palui.domain import ChatKind, Fence, Inbound, TurnKind, UnrecordedPreview
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
    *,
    rerun: bool = True,
) -> Ended | None:
    """`rerun=False`: no earlier turn took these messages (the worker knows from the inbox),
    so there is no interrupted turn's preview to look for. Returns the reply the turn's end
    stored (`Drive`)."""
    turn_id = uuid.uuid4().hex
    store = parts.store
    # What the turn owes the database besides its own rows (token usage, the recall check):
    # written with its next transaction (palui.db.riders); a re-run's before any call goes out.
    riders = Riders(eager=rerun)
    with bound(chat_id=chat_id, turn_id=turn_id):
        latest = batch[-1]
        inputs = [(i.update_id, i.text or "") for i in batch]
        group = latest.chat_kind is not ChatKind.PRIVATE
        # One transaction: the chat's session, the turn, the person's messages, the inbox
        # claim and attempt count (a file's attempt was counted before it was read,
        # palui.chat.media_step). Someone else's words (a forward, a document) taint it.
        session_id, left, unrecorded = await store.turns.start_chat_turn(
            turn_id, chat_id, inputs, chat_kind=latest.chat_kind, rerun=rerun,
            untrusted=foreign.untrusted_rows(batch), taint=starting.from_foreign(batch),
            requester_id=latest.user.id, reply_to=latest.message_id if group else None,
            fence=fence, attempted=[i.update_id for i in batch if i.attachment is None],
        )  # fmt: skip
        if unrecorded is not None:
            left = await _find_unrecorded(parts, chat_id, turn_id, unrecorded)
        started = _Started(turn_id, session_id, left, group, fence, images or {})
        # A server's question during one of this turn's calls goes to this chat and person.
        asking = ASKING.set(Asking(chat_id, latest.user.id, turn_id))
        try:
            return await _run(parts, drive, chat_id, batch, started, riders)
        finally:
            ASKING.reset(asking)
            if riders:  # the turn stopped before any write could carry them (a shutdown)
                await asyncio.shield(store.turns.write_riders(riders))


async def _find_unrecorded(
    parts: TurnParts, chat_id: int, turn_id: str, unrecorded: UnrecordedPreview
) -> int | None:
    """The preview an interrupted run was sending when it died, if it reached the chat: found
    (it shows `unrecorded.text`, edited to itself) and recorded as this turn's own."""
    found = await parts.channel.find_unrecorded(chat_id, unrecorded.floor, unrecorded.text)
    if found is not None:
        await parts.store.turns.record_preview(turn_id, found)
    return found


def _preview_floor(parts: TurnParts, chat_id: int, batch: Sequence[Inbound]) -> int | None:
    """The newest message id known in the chat: a preview sent now gets a greater one."""
    known = [i.message_id for i in batch if i.message_id is not None]
    if (sent := parts.channel.newest_sent_id(chat_id)) is not None:
        known.append(sent)
    return max(known, default=None)


@dataclasses.dataclass(frozen=True, slots=True)
class _Started:
    """What the turn's start decided, for the rest of it."""

    turn_id: str
    session_id: int
    left: int | None  # an interrupted turn's preview this answer replaces
    group: bool
    fence: Fence | None
    images: Mapping[str, tuple[str, ...]]


async def _run(
    parts: TurnParts,
    drive: Drive,
    chat_id: int,
    batch: Sequence[Inbound],
    started: _Started,
    riders: Riders,
) -> Ended | None:
    store = parts.store
    turn_id, session_id, fence = started.turn_id, started.session_id, started.fence
    inputs = [(i.update_id, i.text or "") for i in batch]
    said = " ".join(text for _, text in inputs)
    if parts.memory is not None:
        history = await parts.memory.history(session_id)
        recalled = await parts.memory.recall(chat_id, turn_id, said, riders)
    else:
        history = await store.chats.history(session_id, parts.limits.history_messages)
        recalled = Recalled()
    skills = await parts.skills_prompt(said)
    messages = build_context(
        history.messages,
        summary=history.summary,
        memory=recalled.text,
        now=parts.now(),
        skills=skills,
    )
    messages = with_images(messages, started.images)  # photos: this turn's calls only
    taint = starting.chat_turn(history, recalled, batch)
    recent = history.messages[-RANKING_MESSAGES:]
    offer = await parts.offers.for_messages(recent, TurnKind.CHAT, taint is not None)
    persons = functools.partial(words.of_session, store, session_id)  # read if a call needs it
    tools = await parts.tools(
        offer, turn_id, chat_id, TurnKind.CHAT, taint, persons, fence, riders=riders
    )
    deps = parts.deps(turn_id, chat_id, tools, fence)
    # In a group the answer is one message threaded to what it answers: no preview edited
    # once a second under the group's 20 messages a minute.
    stream = None if started.group else parts.channel.streaming_reply(chat_id)
    if stream is None and started.left is not None:
        # No streaming now (off, or a group), but the answer still replaces what the
        # interrupted run left.
        stream = LeftPreview(parts.channel, chat_id, started.left)
    elif stream is not None:
        if started.left is not None:
            stream.adopt(started.left)  # an interrupted turn's preview: this answer replaces it

        async def sending(text: str) -> None:
            if (floor := _preview_floor(parts, chat_id, batch)) is not None:
                await store.turns.preview_going_out(turn_id, floor, text)

        guard = None
        if fence is not None and parts.fences is not None:
            guard = functools.partial(parts.fences.confirm, fence)
        stream.watch_preview(functools.partial(store.turns.record_preview, turn_id), sending, guard)
        deps = dataclasses.replace(deps, on_delta=stream.push)
    log.info("turn_started", messages=len(batch), tools=len(offer.tools), enabled=offer.enabled)
    update_ids = [update_id for update_id, _ in inputs]
    return await drive(chat_id, turn_id, run_turn(deps, messages), tools, update_ids, stream, fence)
