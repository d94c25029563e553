"""Group chats: which messages Palui takes there, and whose turn they make (DESIGN §1.2a).

In a group Palui answers only what is addressed to it: a message that mentions it (`@name`), a
reply to one of its messages, or a command that is unambiguously its own. Anything else said in
the group is not stored, run or answered (it is the group's conversation, not a request); to
have Palui read such a message, reply to it and mention Palui: its words then come in as the
replied-to message (someone else's words, untrusted). People not in `PALUI_ALLOWED_USERS` are
ignored there without a refusal (`palui.chat.inbox`), so a stranger's mention does not make
Palui talk to the group.

A bare `/new` in a group may be meant for another bot there: Telegram sends a bot the bare
commands of a group whenever it was the last bot to speak. So a command is Palui's when it names
it (`/new@name`) or replies to one of its messages; bare, only when it just shows something
(`/status`, `/help`: a second answer beside another bot's does no harm). A command that changes
or interrupts something (`/new`, `/stop`, `/web`, `/cancel`) or that Palui doesn't know is left
alone bare. Private chats take every command.

A turn serves one person: its requester is whose messages it answers (`[groups] approver =
"requester"`), so messages of different people waiting together make separate turns, in order.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from palui.domain import ChatKind, Inbound

QUEUED = "👀"  # the reaction on a message that waits behind a running turn: seen, it's next


def in_group(inbound: Inbound) -> bool:
    return inbound.chat_kind is not ChatKind.PRIVATE


def threaded_to(inbound: Inbound) -> int | None:
    """The message Palui's answer to `inbound` replies to: in a group, the message itself (so
    the group sees what each answer, card or note belongs to); None in a private chat."""
    return inbound.message_id if in_group(inbound) else None


def palui_command(inbound: Inbound, shown_bare: Collection[str]) -> bool:
    """Whether the inbound is a command Palui runs; `shown_bare`: the commands that only show
    something, which a group may send bare (see the module's docstring)."""
    command = inbound.command
    if command is None:
        return False
    if not in_group(inbound) or inbound.names_bot or inbound.replies_to_bot:
        return True
    return command in shown_bare


def addressed(inbound: Inbound, shown_bare: Collection[str]) -> bool:
    """Whether Palui takes this inbound at all: everything in a private chat and every tap; in
    a group a mention, a reply to Palui or a command of its own (see the module's docstring)."""
    if not in_group(inbound) or inbound.callback_query_id:
        return True
    if inbound.command is not None:
        return palui_command(inbound, shown_bare)
    return inbound.mentions_bot or inbound.replies_to_bot


def one_persons(batch: Sequence[Inbound]) -> list[Inbound]:
    """The messages a turn answers: the first waiting one and those right after it from the
    same person. The rest wait for the next turn, in order, so each turn has one requester."""
    if not batch:
        return []
    person = batch[0].user.id
    taken = 1
    while taken < len(batch) and batch[taken].user.id == person:
        taken += 1
    return list(batch[:taken])
