"""The handler router: commands and button taps, each answered by the one handler that owns it.

A tap's callback data is parsed here, once (`palui.callbacks.parse`), and the typed button goes
to the one tap handler registered for its type: two handlers claiming one button type is refused
when the router is built. Messages (commands, a pasted sign-in address) go to the handler whose
`owns` says so; two claiming one is a bug that is logged, not silently resolved. A tap nobody
owns (a button of an older Palui, forged data) is told the button is not valid.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Protocol

from palui import callbacks
from palui.chat.stored_inbound import for_a_turn
from palui.db import Store
from palui.domain import Inbound
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Cards

log = get_logger("palui.interact")

NOT_VALID = "This button is not valid."


class Handler(Protocol):
    """Answers the messages it owns (a command, a pasted address): never a tap."""

    async def owns(self, inbound: Inbound, *, asked: bool | None = None) -> bool: ...

    async def handle(self, inbound: Inbound) -> bool:
        """Answer it (and mark it done); True when a paused turn can now resume."""
        ...


class TapHandler(Protocol):
    """Answers the taps on the button types it names."""

    @property
    def buttons(self) -> tuple[type[callbacks.Callback], ...]: ...

    async def tap(self, inbound: Inbound, button: Any) -> bool:
        """Answer it (and mark it done); True when a paused turn can now resume."""
        ...


class Router:
    """Implements the `Interactions` port for the chat layer."""

    def __init__(
        self,
        messages: Sequence[Handler],
        taps: Sequence[TapHandler],
        store: Store,
        channel: Cards,
    ) -> None:
        self._messages = tuple(messages)
        self._taps: dict[type[callbacks.Callback], TapHandler] = {}
        for handler in taps:
            for button in handler.buttons:
                if button in self._taps:
                    raise ValueError(f"two handlers for {button.__name__}")
                self._taps[button] = handler
        self._store = store
        self._channel = channel

    async def owns(self, inbound: Inbound, *, asked: bool | None = None) -> bool:
        """Commands and taps are answered here, and a message a handler takes (a pasted
        sign-in address, a typed answer to a server's question); everything else is for a
        turn."""
        if not for_a_turn(inbound):
            return True
        return any([await h.owns(inbound, asked=asked) for h in self._messages])

    async def handle(self, inbound: Inbound) -> bool:
        if inbound.callback_query_id:
            button = callbacks.parse(inbound.callback_data)
            tapped = self._taps.get(type(button)) if button is not None else None
            if tapped is not None:
                return await tapped.tap(inbound, button)
        else:
            owners = [handler for handler in self._messages if await handler.owns(inbound)]
            if len(owners) > 1:
                log.error("inbound_claimed_twice", handlers=[type(h).__name__ for h in owners])
            if owners:
                return await owners[0].handle(inbound)
        await self._store.inbox.mark_done([inbound.update_id])
        if inbound.callback_query_id:
            with contextlib.suppress(ChannelError):
                await self._channel.answer_callback(inbound.callback_query_id, NOT_VALID)
        return False
