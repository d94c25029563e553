"""`sendMessageDraft` in the fake Bot API, as Telegram has it since Bot API 9.5: private chats
only, a non-zero `draft_id`, 0-4096 characters after entity parsing. A draft is not a message:
it is never in `sent_messages`, and the last one of a chat is gone once the bot sends a message
there (or after 30 s in Telegram).

Off by default (`FakeTelegram.drafts_supported = False`: the method is unknown, 404, as on an
older Bot API server), so tests that are about edited previews keep them; turn it on per test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_entities import EntityError, parse_text

__all__ = ["Draft", "FakeDrafts"]

_MAX_TEXT = 4096


@dataclass(frozen=True)
class Draft:
    chat_id: int
    draft_id: int
    text: str


class FakeDrafts:
    def __init__(self) -> None:
        self.drafts: list[Draft] = []  # every draft shown, in order
        self.showing: dict[int, Draft] = {}  # chat -> the draft on screen now

    def api_send_message_draft(self, params: dict[str, Any]) -> bool:
        from tests.fakes.telegram_chats import bad_request

        chat_id = params.get("chat_id")
        if not isinstance(chat_id, int):
            raise bad_request("chat not found")
        if chat_id <= 0:
            raise bad_request("TEXTDRAFT_PEER_INVALID")  # drafts are for private chats only
        draft_id = params.get("draft_id")
        if not isinstance(draft_id, int) or draft_id == 0:
            raise bad_request("parameter draft_id must be non-zero")
        try:
            parsed = parse_text(str(params.get("text") or ""), params.get("parse_mode"))
        except EntityError as error:
            raise bad_request(f"can't parse entities: {error}") from None
        except ValueError:
            raise bad_request("unsupported parse_mode") from None
        if len(parsed.text.encode("utf-16-le")) // 2 > _MAX_TEXT:
            raise bad_request("message is too long")
        draft = Draft(chat_id, draft_id, parsed.text)
        self.drafts.append(draft)
        self.showing[chat_id] = draft
        return True

    def message_sent(self, chat_id: int) -> None:
        """The bot's message replaces the draft on screen."""
        self.showing.pop(chat_id, None)
