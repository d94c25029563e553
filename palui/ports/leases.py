"""The leases work runs under, and where work runs in the background."""

from __future__ import annotations

from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from palui.domain import Fence


class Fences(Protocol):
    """The leases this process holds (`palui.chat.leases`): may work under a fence still act?"""

    async def confirm(self, fence: Fence) -> None:
        """Raise `palui.errors.LeaseLost` unless `fence` is still the lease's current take."""
        ...


class SenderLeases(Fences, Protocol):
    """Leases on chats' sending (`palui.chat.leases.ChatLeases`): a chat's outbox is sent by
    one process at a time (`palui.delivery.outbox`)."""

    @property
    def holder(self) -> str:
        """Who this process is, as the leases name it."""
        ...

    def current(self, fence: Fence) -> bool:
        """Whether `fence` is still held here, without asking the database."""
        ...

    def hold(self, chat_id: int) -> AbstractAsyncContextManager[Fence | None]:
        """The chat's lease while in the block; None when another process holds it."""
        ...


class Spawner(Protocol):
    """Background work of this process (`palui.chat.background.Background`)."""

    @property
    def closed(self) -> bool: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], *, handler: bool = False) -> None: ...
