"""No crash loop: a message whose handling died twice is answered with an apology, not tried again.

Each attempt at a message is counted in its inbox row before the attempt runs, in the database
(a chat turn's start counts it in its own transaction, `palui.db.turns`; a file's reading counts
it first, `palui.chat.media_step`), so a kill -9 in the middle of it counts too. An attempt that
ends marks the row done; one that never ends leaves it pending with its count. The worker's next
look answers what it finds (`given_up`): a message already attempted `MAX_ATTEMPTS` times gets
`APOLOGY` and is marked done, so a file or input that kills the process every time it is read
costs at most two restarts, never one at every start. A single interruption (a kill mid-turn)
still runs again: the second attempt answers it. An orderly stop (a deploy) that cancels an
attempt takes its count back (`uncount`): only a death counts.

A webhook delivery follows the same rule (`palui.db.webhooks`): its summarising turn counts an
attempt as it claims the delivery, so a summary whose turn dies or fails to end (a statement
error at its end) is not summarised again at every look, each a new model request. One
attempted `MAX_ATTEMPTS` times is marked handled with `webhook_note` instead (its failed turns
stay on the console's Turns page). A wait for the model does not count (`palui.db.turns`).
"""

from __future__ import annotations

from collections.abc import Sequence

from palui.chat.groups import threaded_to
from palui.chat.stored_inbound import inbound_from_json
from palui.db import Store
from palui.domain import Delivery, Inbound, InboxItem
from palui.logs import get_logger

log = get_logger("palui.chat.attempts")

MAX_ATTEMPTS = 2
APOLOGY = (
    "Sorry: I tried twice to answer your message and something went wrong each time, so I "
    "stopped trying. Send it again, perhaps in other words or without the file, and I'll try "
    "afresh."
)


def split(items: Sequence[InboxItem]) -> tuple[tuple[InboxItem, ...], tuple[InboxItem, ...]]:
    """(the items to try, the items attempted `MAX_ATTEMPTS` times already)."""
    tried = tuple(item for item in items if item.attempts >= MAX_ATTEMPTS)
    return tuple(item for item in items if item.attempts < MAX_ATTEMPTS), tried


async def give_up(store: Store, chat_id: int, items: Sequence[InboxItem]) -> None:
    """One apology for them all (in a group, threaded to the first), then they are done."""
    update_ids = [item.update_id for item in items]
    log.warning("messages_given_up", chat_id=chat_id, update_ids=update_ids)
    first = inbound_from_json(items[0].payload) if items else None
    await store.outbox.add(chat_id, APOLOGY, reply_to=threaded_to(first) if first else None)
    await store.inbox.mark_done(update_ids)


async def uncount(store: Store, batch: Sequence[Inbound]) -> None:
    """Take back the count of an attempt an orderly stop cancelled. The batch's messages may
    not all have been counted yet (a turn's start counts its text): a count never goes below
    zero, and at worst a message that died once gets one attempt more."""
    await store.inbox.uncount_attempt([inbound.update_id for inbound in batch])


def webhook_note(webhook: str) -> str:
    return (
        f"📨 Webhook {webhook}\nI tried {MAX_ATTEMPTS} times to summarise an event it sent and "
        "something went wrong each time, so I stopped trying. The console's Turns page shows "
        "the failed tries."
    )


def spent(delivery: Delivery) -> bool:
    """The delivery was attempted `MAX_ATTEMPTS` times already: no more summaries."""
    return delivery.attempts >= MAX_ATTEMPTS


async def give_up_delivery(store: Store, delivery: Delivery) -> None:
    log.warning("webhook_given_up", chat_id=delivery.chat_id, delivery_id=delivery.id)
    await store.webhooks.give_up(delivery, webhook_note(delivery.webhook))
