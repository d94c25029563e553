"""No link previews, ever: Telegram's servers fetch the first URL of a message the moment it is
sent, so a card showing a held call's URL (data in its query) would leak before Deny. Every
sendMessage and editMessageText Palui makes carries `link_preview_options.is_disabled`."""

from __future__ import annotations

import json

from palui.channels.telegram import TelegramChannel
from palui.domain import Button, Card
from palui.domain.sealed import CLOSE, OPEN
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.telegram_api import FakeTelegram, RecordedRequest

LEAK = "https://collect.example/x?notes=milk-and-the-pin-4711"
DOCS = "https://docs.example/palui/start"


def _text_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if r.method.lower() in ("sendmessage", "editmessagetext")]


async def test_replies_cards_and_the_web_link_go_out_without_link_previews(
    with_notes, mcp_in_process, start_palui, fake_telegram, fake_model
) -> None:
    steps = [
        Script(text=f"The guide is at {DOCS} and it is short."),
        Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": LEAK}))]),
        Script(text="Left it alone."),
    ]

    def brain(_request: ModelRequest) -> Script:
        return steps.pop(0)

    fake_model.brain = brain
    await start_palui()

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "where is the guide?")
    await fake_telegram.wait_for_text(OWNER_CHAT, DOCS)

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "clean up my notes")
    card = await fake_telegram.wait_for_text(OWNER_CHAT, "Approval needed")
    assert LEAK in card["text"]
    keyboard = card["reply_markup"]["inline_keyboard"]
    deny = next(b["callback_data"] for row in keyboard for b in row if "Deny" in b["text"])
    fake_telegram.push_callback(OWNER_CHAT, OWNER_ID, card["message_id"], deny)
    await fake_telegram.wait_for_text(OWNER_CHAT, "Denied by")
    await fake_telegram.wait_for_text(OWNER_CHAT, "Left it alone.")

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/web")
    link = await fake_telegram.wait_for_text(OWNER_CHAT, "/ui/signin/")
    assert OPEN not in link["text"] and CLOSE not in link["text"]  # sent unmarked

    sent = _text_requests(fake_telegram.requests)
    with_urls = [r for r in sent if "http" in str(r.params.get("text"))]
    assert len(with_urls) >= 3  # the reply, the card (and its edit), the link
    for request in sent:
        assert request.params.get("link_preview_options") == {"is_disabled": True}, request
    assert fake_telegram.previews_allowed == []
    assert fake_telegram.previews_fetched == []


async def test_the_fake_counts_a_url_sent_with_previews_on_as_fetched(fake_telegram) -> None:
    from telegram import Bot

    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as bot:
        await bot.send_message(OWNER_CHAT, f"see {DOCS}")
        assert fake_telegram.previews_fetched == [DOCS]
    fake_telegram.previews_fetched.clear()  # seen: the fixture fails a test that leaves one


async def test_a_page_a_server_asks_to_open_is_a_url_button_and_never_previewed() -> None:
    """A server's URL-mode question (palui/connectors/url_questions.py): its address goes out
    exactly, in the card's text and as the URL of its button, with previews off."""
    card = Card(
        f"🔗 mcp-desk asks you to open a page:\n{LEAK}",
        rows=((Button("🔗 Open the page", "", url=LEAK),), (Button("✅ Done", "el:t:y"),)),
    )
    async with FakeTelegram() as fake:
        channel = TelegramChannel(fake.token, fake.url)
        await channel.initialize()
        try:
            await channel.send_card(OWNER_CHAT, card)
        finally:
            await channel.close()
        (sent,) = _text_requests(fake.requests)
        assert fake.previews_fetched == []

    assert sent.params.get("link_preview_options") == {"is_disabled": True}
    assert sent.params["reply_markup"]["inline_keyboard"] == [
        [{"text": "🔗 Open the page", "url": LEAK}],
        [{"text": "✅ Done", "callback_data": "el:t:y"}],
    ]
