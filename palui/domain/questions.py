"""A server's question during a tool call, as stored (palui/db/server_questions.py) and asked
(palui/connectors/elicitation.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoredQuestion:
    token: str
    chat_id: int
    user_id: int
    turn_id: str | None
    connector_id: str
    text: str
    call: str | None  # JSON: tool, arguments, key, request_state (input-required rounds only)
    answer: str | None = None
    typed_field: str | None = None  # JSON of the field answered by the next message (forms.py)
    message_id: int | None = None  # the card, once sent
