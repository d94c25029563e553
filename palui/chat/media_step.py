"""The media step before a chat turn: each message's file made into what the turn reads.

A file that can't be read (too large, no transcription model, a model without vision, a type
Palui doesn't read) gets its reply and is marked done, so it runs nothing and is handled once.
The others go on to the turn with their text (a transcript, a photo's placeholder, a caption)
and a document's text as someone else's words (`Inbound.foreign`, fenced by the turn). A voice
note's quote line goes out before the answer, so the person sees first what was heard; it is
stored once per voice note, so a turn re-run after a crash (which reads the note again) shows it
no second time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from palui.chat.groups import threaded_to
from palui.db import Store
from palui.domain import Inbound
from palui.logs import get_logger
from palui.media import MediaIntake, Read, Refused

log = get_logger("palui.media")

# Without an intake (a channel that holds no files): what a file's message gets.
UNREADABLE_NOTE = "I can only read text messages here."
BROKEN_NOTE = "Something went wrong while I read that file. Try sending it again, or as text."


@dataclasses.dataclass(frozen=True, slots=True)
class MediaBatch:
    inbounds: list[Inbound]  # the batch, each file's message with the text the turn reads
    images: dict[str, tuple[str, ...]]  # a photo's placeholder text -> its data URLs
    heard: list[Heard]  # quote lines to send before the answer


@dataclasses.dataclass(frozen=True, slots=True)
class Heard:
    """A voice note's quote line: stored once per note (`about`), threaded in a group."""

    about: int  # the voice note's update
    text: str
    reply_to: int | None


async def read_media(
    store: Store, intake: MediaIntake | None, chat_id: int, batch: Sequence[Inbound]
) -> MediaBatch:
    out = MediaBatch([], {}, [])
    files = [i.update_id for i in batch if i.attachment is not None and not i.edited]
    # Counted before a byte is read: a file that kills the process counts (palui.chat.attempts).
    await store.inbox.count_attempt(files)
    for inbound in batch:
        if inbound.attachment is None or inbound.edited:
            out.inbounds.append(inbound)
            continue
        read = await _read(intake, inbound)
        if isinstance(read, Refused):
            await store.outbox.add(chat_id, read.note, reply_to=threaded_to(inbound))
            await store.inbox.mark_done([inbound.update_id])
            continue
        foreign = inbound.foreign if read.foreign is None else read.foreign
        out.inbounds.append(dataclasses.replace(inbound, text=read.text, foreign=foreign))
        if read.images:
            out.images[read.text] = out.images.get(read.text, ()) + read.images
        if read.heard:
            out.heard.append(Heard(inbound.update_id, read.heard, threaded_to(inbound)))
    return out


async def _read(intake: MediaIntake | None, inbound: Inbound) -> Read | Refused:
    if intake is None:
        return Refused(UNREADABLE_NOTE)
    try:
        return await intake.read(inbound)
    except Exception:  # a file that breaks a parser is answered once, not retried forever
        log.exception("media_read_failed", update_id=inbound.update_id)
        return Refused(BROKEN_NOTE)
