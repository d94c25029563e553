"""The handler router: commands and button taps, each answered by the one handler that owns it.

Every handler says whether an inbound is its own (`owns`, from the parsed callback's type or the
command) and then answers it; ownership never overlaps, so the order handlers are listed in does
not matter, and an inbound two handlers claim is a bug that is logged, not silently resolved.
A tap nobody owns (a button of an older Palui, forged data) is told the button is not valid.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Protocol

from palui.chat.stored_inbound import for_a_turn
from palui.db import Store
from palui.domain import Inbound
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Cards

log = get_logger("palui.interact")

NOT_VALID = "This button is not valid."


class Handler(Protocol):
    def owns(self, inbound: Inbound) -> bool: ...

    async def handle(self, inbound: Inbound) -> bool:
        """Answer it (and mark it done); True when a paused turn can now resume."""
        ...


class Router:
    """Implements the `Interactions` port for the chat layer."""

    def __init__(self, handlers: Sequence[Handler], store: Store, channel: Cards) -> None:
        self._handlers = tuple(handlers)
        self._store = store
        self._channel = channel

    def owns(self, inbound: Inbound) -> bool:
        """Commands and taps are answered here, and a message a handler takes (a pasted
        sign-in address); everything else is for a turn."""
        return not for_a_turn(inbound) or any(h.owns(inbound) for h in self._handlers)

    async def handle(self, inbound: Inbound) -> bool:
        owners = [handler for handler in self._handlers if handler.owns(inbound)]
        if len(owners) > 1:
            log.error("inbound_claimed_twice", handlers=[type(h).__name__ for h in owners])
        if owners:
            return await owners[0].handle(inbound)
        await self._store.inbox.mark_done([inbound.update_id])
        if inbound.callback_query_id:
            with contextlib.suppress(ChannelError):
                await self._channel.answer_callback(inbound.callback_query_id, NOT_VALID)
        return False
