"""An inbound survives the inbox's JSON with its file, its chat's kind and its foreign words."""

from __future__ import annotations

import json

from palui.chat.stored_inbound import inbound_from_json, inbound_to_json
from palui.domain import (
    Attachment,
    AttachmentKind,
    ChatKind,
    ChatUser,
    Foreign,
    ForeignKind,
    Inbound,
)


def test_an_inbound_with_a_file_and_foreign_words_comes_back_whole() -> None:
    inbound = Inbound(
        update_id=1,
        chat_id=-100,
        user=ChatUser(id=3, username="ana"),
        text="what is this?",
        chat_kind=ChatKind.SUPERGROUP,
        attachment=Attachment(kind=AttachmentKind.DOCUMENT, file_id="f1", file_name="a.pdf"),
        foreign=(Foreign(kind=ForeignKind.FORWARD, label="a forward from Bo", text="hi"),),
        mentions_bot=True,
    )
    stored = json.loads(json.dumps(inbound_to_json(inbound)))
    assert inbound_from_json(stored) == inbound


def test_a_row_stored_before_these_fields_reads_as_a_private_text_message() -> None:
    stored = {"update_id": 1, "chat_id": 2, "user": {"id": 3}, "text": "hi"}
    inbound = inbound_from_json(stored)
    assert inbound.chat_kind is ChatKind.PRIVATE
    assert inbound.attachment is None and inbound.foreign == ()
