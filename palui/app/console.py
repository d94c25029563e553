"""`palui chat`: the same engine in a terminal. One line in, the reply out, until EOF or /quit;
an approval card becomes a y/n question, answered as a tap on it would be."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TextIO

from palui.channels.console import ConsoleChannel
from palui.chat.chats import Chats
from palui.domain import ChatUser, Inbound

CONSOLE_CHAT_ID = 0  # never a Telegram chat id
CONSOLE_USER = ChatUser(id=0, username="console")


async def converse(
    chats: Chats, channel: ConsoleChannel, read_line: Callable[[str], str], out: TextIO
) -> None:
    out.write("Palui in the terminal. Type a message; /help for commands, /quit to leave.\n")
    while True:
        try:
            line = await asyncio.to_thread(read_line, "you> ")
        except EOFError:
            break
        if line.strip() in {"/quit", "/exit"}:
            break
        if line.strip():
            await _event(chats, text=line.strip())
        while channel.pending_cards:
            card = channel.pending_cards.pop(0)
            try:
                answer = await asyncio.to_thread(read_line, "Approve? [y/N] ")
            except EOFError:
                answer = "n"
            data = channel.decision(card, answer.strip().lower() in {"y", "yes"})
            await _event(chats, callback_data=data)


async def _event(
    chats: Chats, *, text: str | None = None, callback_data: str | None = None
) -> None:
    # Negative ids never collide with Telegram's positive update ids.
    inbound = Inbound(
        update_id=-time.time_ns(),
        chat_id=CONSOLE_CHAT_ID,
        user=CONSOLE_USER,
        text=text,
        callback_query_id="console" if callback_data else None,
        callback_data=callback_data,
    )
    await chats.accept(inbound)
    await chats.wait_idle(CONSOLE_CHAT_ID)
