"""An inbound event as the inbox stores it (JSON), and back; and which ones a turn answers."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from palui.domain import (
    Attachment,
    AttachmentKind,
    ChatKind,
    ChatUser,
    Foreign,
    ForeignKind,
    Inbound,
)


def inbound_to_json(inbound: Inbound) -> dict[str, Any]:
    data = dataclasses.asdict(inbound)
    data["received_at"] = inbound.received_at.isoformat() if inbound.received_at else None
    return data


def inbound_from_json(data: dict[str, Any]) -> Inbound:
    fields = dict(data)
    fields["user"] = ChatUser(**fields["user"])
    if fields.get("received_at"):
        fields["received_at"] = datetime.fromisoformat(fields["received_at"])
    # Rows stored before these fields existed lack them: the dataclass defaults apply.
    if "chat_kind" in fields:
        fields["chat_kind"] = ChatKind(fields["chat_kind"])
    if fields.get("attachment"):
        attachment = dict(fields["attachment"])
        attachment["kind"] = AttachmentKind(attachment["kind"])
        fields["attachment"] = Attachment(**attachment)
    fields["foreign"] = tuple(
        Foreign(**{**item, "kind": ForeignKind(item["kind"])}) for item in fields.get("foreign", ())
    )
    return Inbound(**fields)


def for_a_turn(inbound: Inbound) -> bool:
    """A message the chat's next turn answers; commands (this bot's or another's) and taps
    are answered at once (palui.interact) and never reach the model."""
    return (
        inbound.command is None
        and inbound.addressed_elsewhere is None
        and not inbound.callback_query_id
    )
