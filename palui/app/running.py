"""`Running`: the parts one channel's serving needs, built together by `Palui._assemble`."""

from __future__ import annotations

from dataclasses import dataclass

from palui.app.warmup import Warm
from palui.chat.background import Background
from palui.chat.chats import Chats
from palui.chat.wakeups import Wakeups
from palui.jobs.scheduler import JobScheduler
from palui.tools.switchboard import Switchboard
from palui.web.deps import WebDeps


@dataclass(frozen=True, slots=True)
class Running:
    """The parts one channel's serving needs, built together by `Palui._assemble`."""

    chats: Chats
    wakeups: Wakeups
    scheduler: JobScheduler
    board: Switchboard
    menu: list[tuple[str, str]]
    background: Background
    prunes: bool  # the daily retention prune: the daemon's, not a one-chat console's
    web: WebDeps  # what the web console's pages read and change
    warm_ups: tuple[tuple[str, Warm], ...]  # what a first turn would load: `palui.app.warmup`
