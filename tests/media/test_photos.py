"""Photos: the largest size goes to the model as an image part beside the caption, when the model
accepts images; with a model marked without vision, a clear reply and no model call. History
keeps a text placeholder, never the image."""

from __future__ import annotations

import base64
import json

from tests.conftest import OWNER_CHAT, OWNER_ID

SMALL = b"\xff\xd8\xff small jpeg"
LARGE = b"\xff\xd8\xff the large jpeg, every pixel of it"
VISION = {"PALUI_MODEL_VISION": "true"}


def texts(messages: list[dict]) -> list[str]:
    return [m["text"] for m in messages]


async def test_a_photo_with_a_caption_reaches_the_model_as_an_image_and_the_caption(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**VISION)
    fake_telegram.files.push_photo(OWNER_CHAT, OWNER_ID, [SMALL, LARGE], caption="what is it?")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo:")
    *_, photo, user = fake_model.requests[0].messages
    # The photo is someone else's content: its fenced note says the image follows.
    assert photo["role"] == "user" and "a photo you sent" in photo["content"]
    assert user["role"] == "user"
    parts = user["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert "what is it?" in parts[0]["text"]
    url = parts[1]["image_url"]["url"]
    assert url == "data:image/jpeg;base64," + base64.b64encode(LARGE).decode()
    assert len(fake_telegram.files.downloads) == 1  # the largest size alone

    # The next turn's history holds the placeholder, not the image.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "and now?")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    earlier = fake_model.requests[1].messages[2]
    assert earlier == {"role": "user", "content": "[photo] what is it?"}
    assert "data:image" not in json.dumps(fake_model.requests[1].body)


async def test_a_model_without_vision_gets_no_call_and_the_person_a_clear_reply(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(PALUI_MODEL_VISION="false")
    update_id = fake_telegram.files.push_photo(OWNER_CHAT, OWNER_ID, [LARGE], caption="look")
    [note] = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1))
    assert "can't see images" in note
    await fake_telegram.wait_until_confirmed(update_id)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "fine")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert [r.last_user_text for r in fake_model.requests] == ["fine"]
    assert fake_telegram.files.downloads == []


async def test_a_photo_past_the_limit_gets_a_clear_reply_and_runs_nothing(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**VISION, PALUI_MEDIA__MAX_BYTES="1000")
    fake_telegram.files.push_photo(OWNER_CHAT, OWNER_ID, [LARGE], reported_size=5_000_000)
    [note] = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1))
    assert "too large" in note and "4.8 MB" in note
    assert fake_model.requests == [] and fake_telegram.files.downloads == []
