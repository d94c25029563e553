"""A whole chat channel: every narrow port at once. Only the composition root (`palui.app`) and
the adapters that implement it (Telegram, the console) use this; everything else asks for the
port it uses."""

from __future__ import annotations

from typing import Protocol

from palui.ports.cards import Cards
from palui.ports.files import Files
from palui.ports.leftovers import Leftovers
from palui.ports.reactions import Reactions
from palui.ports.sending import Notices, Sending
from palui.ports.streaming import Streaming


class Replies(Sending, Leftovers, Protocol):
    """What the outbox sends through: parts, and the search for parts a crash left unrecorded."""


class Answering(Replies, Notices, Streaming, Protocol):
    """What a turn answers through: its stream, its typing, and the search for its preview."""


class Notifying(Cards, Notices, Protocol):
    """Cards and notices: what answers a tap, a sheet or a stranger."""


class Channel(Answering, Notifying, Files, Reactions, Protocol):
    """Where replies go and what people send comes from."""
