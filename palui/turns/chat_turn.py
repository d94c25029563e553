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
from palui.delivery.shown import find_unrecorded_preview
from palui.delivery.streams import answer_stream
from palui.domain import AttachmentKind, ChatKind, Fence, Inbound, TurnKind
from palui.domain.chat import author_label
from palui.domain.turn_record import TurnStart
from palui.logs import bound, get_logger
from palui.media import with_images
from palui.memory import Recalled
from palui.observe import trace_id
from palui.turns import foreign, words
from palui.turns import starting_taint as starting
from palui.turns.drive import Drive
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
        start = TurnStart(
            turn_id,
            chat_id,
            inputs,
            untrusted=foreign.untrusted_rows(batch),
            taint=starting.from_foreign(batch),
            requester_id=latest.user.id,
            reply_to=latest.message_id if group else None,
            fence=fence,
            voice=any(i.attachment and i.attachment.kind is AttachmentKind.VOICE for i in batch),
            authors={i.update_id: _label(i) for i in batch} if group else {},
            trace_id=trace_id(),
        )
        attempted = [i.update_id for i in batch if i.attachment is None]
        if rerun:
            # Before the start: when Telegram can't be asked this raises (`ChannelError`), and
            # nothing is started or counted; the worker looks again soon (palui.delivery.shown).
            await find_unrecorded_preview(parts.channel, store, chat_id, [u for u, _ in inputs])
        begun = await store.turns.start_chat_turn(
            start, chat_kind=latest.chat_kind, rerun=rerun, attempted=attempted
        )
        left = begun.preview
        started = _Started(turn_id, begun.session_id, left, group, fence, images or {}, begun.model)
        # A server's question during one of this turn's calls goes to this chat and person.
        asking = ASKING.set(Asking(chat_id, latest.user.id, turn_id))
        try:
            return await _run(parts, drive, chat_id, batch, started, riders)
        finally:
            ASKING.reset(asking)
            if riders:  # the turn stopped before any write could carry them (a shutdown)
                await asyncio.shield(store.turns.write_riders(riders))


def _label(inbound: Inbound) -> str:
    user = inbound.user
    return author_label(user.id, user.username, user.first_name)


@dataclasses.dataclass(frozen=True, slots=True)
class _Started:
    """What the turn's start decided, for the rest of it."""

    turn_id: str
    session_id: int
    left: int | None  # an interrupted turn's preview this answer replaces
    group: bool
    fence: Fence | None
    images: Mapping[str, tuple[str, ...]]
    model: str | None  # the chat's chosen model (None: the default)


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
    deps = parts.deps(turn_id, chat_id, tools, fence, started.model)
    guard = None
    if fence is not None and parts.fences is not None:
        guard = functools.partial(parts.fences.confirm, fence)
    shown = answer_stream(
        parts.channel,
        store,
        chat_id,
        turn_id,
        batch,
        left=started.left,
        group=started.group,
        guard=guard,
    )
    stream = shown.stream
    if shown.on_delta is not None:
        deps = dataclasses.replace(deps, on_delta=shown.on_delta)
    log.info("turn_started", messages=len(batch), tools=len(offer.tools), enabled=offer.enabled)
    update_ids = [update_id for update_id, _ in inputs]
    return await drive(chat_id, turn_id, run_turn(deps, messages), tools, update_ids, stream, fence)
