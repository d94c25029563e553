"""Group chats: which messages Palui takes there (DESIGN §1.2a).

In a group Palui answers only what is addressed to it: a message that mentions it (`@name`), a
reply to one of its messages, or a command. A bare `/status` counts as addressed: with privacy
mode on (the default) Telegram sends a bot only the commands meant for it anyway, and `Inbound.
command` already drops `/status@other_bot`. Anything else said in the group is not stored, run
or answered (it is the group's conversation, not a request); to have Palui read such a message,
reply to it and mention Palui: its words then come in as the replied-to message (someone
else's words, untrusted). People not in `PALUI_ALLOWED_USERS` are ignored there without a
refusal (`palui.chat.inbox`), so a stranger's mention does not make Palui talk to the group.
"""

from __future__ import annotations

from palui.domain import ChatKind, Inbound

QUEUED = "👀"  # the reaction on a message that waits behind a running turn: seen, it's next


def in_group(inbound: Inbound) -> bool:
    return inbound.chat_kind is not ChatKind.PRIVATE


def addressed(inbound: Inbound) -> bool:
    """Whether Palui takes this inbound at all: everything in a private chat and every tap; in
    a group a mention, a reply to Palui or a command (see the module's docstring)."""
    if not in_group(inbound) or inbound.callback_query_id:
        return True
    return inbound.command is not None or inbound.mentions_bot or inbound.replies_to_bot
