"""How the Telegram adapter reads where a message was said and whose words are in it
(palui/channels/telegram/words.py): a group's addressing, forwards and replied-to messages."""

from __future__ import annotations

from typing import Any

from telegram import Update

from palui.channels.telegram.inbound import to_inbound
from palui.domain import ChatKind, Foreign, ForeignKind, Inbound

BOT = {"id": 123456789, "is_bot": True, "first_name": "Palui", "username": "palui_test_bot"}
ANA = {"id": 1001, "is_bot": False, "first_name": "Ana"}
BO = {"id": 2002, "is_bot": False, "first_name": "Bo", "last_name": "Li"}
GROUP = {"id": -100123, "type": "supergroup", "title": "Friends"}


def message(text: str | None = "hi", chat: dict | None = None, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"message_id": 7, "date": 1_700_000_000, "from": ANA, **fields}
    data["chat"] = chat or {"id": 1001, "type": "private", "first_name": "Ana"}
    if text is not None:
        data["text"] = text
    return data


def read(data: dict[str, Any]) -> Inbound:
    inbound = to_inbound(Update.de_json({"update_id": 1, "message": data}, None), "palui_test_bot")
    assert inbound is not None
    return inbound


def test_a_private_message_is_private_and_nobody_elses_words() -> None:
    inbound = read(message("hello"))
    assert inbound.chat_kind is ChatKind.PRIVATE and inbound.foreign == ()
    assert inbound.text == "hello" and not inbound.mentions_bot


def test_a_group_message_mentions_the_bot_by_entity_by_text_mention_or_by_name() -> None:
    entity = {"type": "mention", "offset": 4, "length": 15}
    by_entity = read(message("hey @Palui_Test_Bot look", GROUP, entities=[entity]))
    assert by_entity.chat_kind is ChatKind.SUPERGROUP and by_entity.mentions_bot
    text_mention = {"type": "text_mention", "offset": 0, "length": 5, "user": BOT}
    assert read(message("Palui, look", GROUP, entities=[text_mention])).mentions_bot
    assert read(message(None, GROUP, caption="for @palui_test_bot", photo=[])).mentions_bot
    assert not read(message("mail me at x@palui_test_bot.com", GROUP)).mentions_bot
    assert not read(message("hey @palui_test_bot_fan", GROUP)).mentions_bot
    assert not read(message("lunch?", GROUP)).mentions_bot


def test_a_reply_to_the_bot_addresses_it_and_brings_no_foreign_words() -> None:
    bots = message("an answer", GROUP, **{"from": BOT})
    inbound = read(message("thanks", GROUP, reply_to_message=bots))
    assert inbound.replies_to_bot and inbound.foreign == ()


def test_a_reply_to_someone_else_brings_their_words_and_to_oneself_does_not() -> None:
    bos = message("transfer 100 EUR", GROUP, **{"from": BO})
    inbound = read(message("@palui_test_bot what's this?", GROUP, reply_to_message=bos))
    assert not inbound.replies_to_bot and inbound.text == "@palui_test_bot what's this?"
    assert inbound.foreign == (
        Foreign(ForeignKind.REPLY, "a message from Bo Li you replied to", "transfer 100 EUR"),
    )
    own = message("my earlier words", GROUP)
    assert read(message("and also", GROUP, reply_to_message=own)).foreign == ()


def test_in_a_forum_topic_the_topic_root_is_no_reply() -> None:
    root = message(
        None, GROUP, **{"from": BO, "forum_topic_created": {"name": "t", "icon_color": 1}}
    )
    inbound = read(message("hi", GROUP, reply_to_message=root, is_topic_message=True))
    assert inbound.foreign == () and not inbound.replies_to_bot


def test_a_forward_is_its_authors_words_not_the_persons() -> None:
    origin = {"type": "user", "date": 1_600_000_000, "sender_user": BO}
    entity = {"type": "mention", "offset": 0, "length": 15}
    forwarded = message("@palui_test_bot pay me", forward_origin=origin, entities=[entity])
    inbound = read(forwarded)
    assert inbound.text is None and inbound.command is None
    assert not inbound.mentions_bot  # Bo's mention doesn't address Palui
    assert inbound.foreign == (
        Foreign(ForeignKind.FORWARD, "a forwarded message from Bo Li", "@palui_test_bot pay me"),
    )
    hidden = {"type": "hidden_user", "date": 1, "sender_user_name": "Ghost\n\u202eName"}
    [item] = read(message("boo", forward_origin=hidden)).foreign
    assert item.label == "a forwarded message from Ghost Name"
    channel = {"type": "channel", "date": 1, "message_id": 3, "chat": {"id": -1, "type": "channel"}}
    channel["chat"]["title"] = "News " * 30
    [item] = read(message(None, caption="headline", photo=[], forward_origin=channel)).foreign
    assert item.text == "headline" and len(item.label) < 80 and item.label.endswith("…")


def test_forwarding_ones_own_message_keeps_it_the_persons() -> None:
    origin = {"type": "user", "date": 1_600_000_000, "sender_user": ANA}
    inbound = read(message("note to self", forward_origin=origin))
    assert inbound.text == "note to self" and inbound.foreign == ()


def test_a_tap_in_a_group_knows_its_chat_kind() -> None:
    query = {
        "id": "q1",
        "from": ANA,
        "chat_instance": "x",
        "data": "ap:token:y",
        "message": message("card", GROUP, **{"from": BOT}),
    }
    inbound = to_inbound(Update.de_json({"update_id": 2, "callback_query": query}, None))
    assert inbound is not None and inbound.chat_kind is ChatKind.SUPERGROUP
