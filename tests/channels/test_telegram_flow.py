"""A person's messages through the real python-telegram-bot, a fake Bot API and a fake model."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import Script
from tests.toolkit import texts


def roles_and_contents(request: object) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in request.messages]  # type: ignore[attr-defined]


async def test_a_message_gets_one_reply_and_the_next_turn_sees_the_history(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(text="Hello, Ana."), Script(text="You said hi."))
    await start_palui()

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    assert texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1)) == ["Hello, Ana."]
    first = roles_and_contents(fake_model.requests[0])
    assert first[0][0] == "system"
    assert first[1:] == [("user", "hi")]

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what did I say?")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert texts(replies) == ["Hello, Ana.", "You said hi."]
    second = roles_and_contents(fake_model.requests[1])
    assert second[1:] == [("user", "hi"), ("assistant", "Hello, Ana."), ("user", "what did I say?")]
    assert len(fake_model.requests) == 2


async def test_a_redelivered_update_runs_no_second_turn(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("once")
    await start_palui()
    update_id = fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    await fake_telegram.wait_until_confirmed(update_id)

    # Telegram sends the very same update again (as it does when a confirmation is lost).
    fake_telegram.redeliver(update_id)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "second")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert fake_telegram.delivered_count(update_id) >= 2
    assert len(fake_model.requests) == 2
    assert [r.messages[-1]["content"] for r in fake_model.requests] == ["hello", "second"]


async def test_a_stranger_is_refused_once_and_runs_no_model_call(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("for the owner")
    await start_palui()
    stranger_chat = 555
    fake_telegram.push_text(stranger_chat, 555, "let me in")
    fake_telegram.push_text(stranger_chat, 555, "please")
    refusal = await fake_telegram.wait_for_messages(stranger_chat, 1)
    assert "private assistant" in refusal[0]["text"]
    assert "(555)" in refusal[0]["text"]

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert len(fake_telegram.sent_messages(stranger_chat)) == 1  # one refusal a day
    assert len(fake_model.requests) == 1
    assert all("let me in" not in str(r.messages) for r in fake_model.requests)


async def test_stop_cancels_a_slow_model_call_and_the_next_message_works(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.queue(Script(hang=True), Script(text="fresh answer"))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "think hard")
    await fake_model.wait_until_in_flight()

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/stop")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=5)
    assert texts(replies) == ["Stopped."]
    await fake_model.wait_for_disconnects()

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello again")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert texts(replies) == ["Stopped.", "fresh answer"]


async def test_a_message_sent_during_a_turn_is_answered_next(
    start_palui, fake_telegram, fake_model
) -> None:
    release = asyncio.Event()

    async def brain(request):
        if len(fake_model.requests) == 1:
            await release.wait()
            return Script(text="first answer")
        return Script(text="second answer")

    fake_model.brain = brain
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "one")
    await fake_model.wait_until_in_flight()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "two")
    await fake_telegram.wait_until_confirmed(fake_telegram.last_update_id)
    release.set()

    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert texts(replies) == ["first answer", "second answer"]
    assert roles_and_contents(fake_model.requests[1])[-1] == ("user", "two")


async def test_new_starts_an_empty_session(start_palui, fake_telegram, fake_model) -> None:
    fake_model.reply("noted")
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "my secret plan")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/new")
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    assert "fresh conversation" in replies[1]["text"]

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what was my plan?")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    assert roles_and_contents(fake_model.requests[-1])[1:] == [("user", "what was my plan?")]


async def test_status_shows_model_tokens_runs_and_database(
    start_palui, fake_telegram, fake_model, database_url
) -> None:
    fake_model.queue(Script(text="ok", usage=(1200, 34)))
    await start_palui(PALUI_DAILY_TOKEN_CAP="200000")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/status")
    status = (await fake_telegram.wait_for_messages(OWNER_CHAT, 2))[1]["text"]
    assert "model openai/fake-model" in status
    assert "Tokens today: 1,234 / 200,000" in status
    assert "runs this hour: 1 / 60" in status
    kind = "PostgreSQL" if database_url.startswith("postgresql") else "SQLite"
    assert f"Database: {kind}" in status
    assert len(fake_model.requests) == 1  # commands never reach the model


async def test_commands_are_registered_and_unknown_ones_get_help(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui()
    await fake_telegram.wait_for_request("setMyCommands")
    registered = {c["command"] for c in fake_telegram.commands}
    assert {"start", "help", "new", "stop", "status"} <= registered

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/frobnicate now")
    reply = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"]
    assert "/frobnicate" in reply and "/help" in reply
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/help")
    reply = (await fake_telegram.wait_for_messages(OWNER_CHAT, 2))[1]["text"]
    assert "/stop" in reply
    assert fake_model.requests == []


@pytest.mark.production_pace
async def test_a_long_reply_arrives_in_order_in_parts_under_the_limit(
    start_palui, fake_telegram, fake_model
) -> None:
    paragraphs = [f"Paragraph {n}: " + "word " * 80 for n in range(40)]
    long_text = "\n\n".join(p.strip() for p in paragraphs)
    assert len(long_text) > 10_000
    fake_model.reply(long_text)
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "write a lot")
    await fake_model.wait_for_request()
    await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    await _wait_for_all_parts(fake_telegram, "Paragraph 39")
    sent = fake_telegram.sent_messages(OWNER_CHAT)
    assert all(len(m["text"]) <= 4096 for m in sent)
    joined = " ".join(m["text"] for m in sent)
    order = [joined.index(f"Paragraph {n}:") for n in range(40)]
    assert order == sorted(order)
    assert joined.split() == long_text.split()


async def _wait_for_all_parts(fake_telegram, marker: str) -> None:
    await fake_telegram.wait_for_request(
        "sendMessage", predicate=lambda params: marker in str(params.get("text", ""))
    )


async def test_flood_control_delays_the_next_send_and_loses_nothing(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.reply("patience")
    fake_telegram.flood("sendMessage", times=1, retry_after=1)
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    assert texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1)) == ["patience"]
    attempts = [r for r in fake_telegram.requests if r.method == "sendMessage"]
    assert len(attempts) == 2
    assert attempts[1].at - attempts[0].at >= 1.0  # waited the retry_after it was given


async def test_markdown_is_sent_as_telegram_html(start_palui, fake_telegram, fake_model) -> None:
    fake_model.reply("**Done**: use `pip` <now>")
    await start_palui(PALUI_STREAM_REPLIES="false")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    request = await fake_telegram.wait_for_request("sendMessage")
    assert request.params["parse_mode"] == "HTML"
    assert request.params["text"] == "<b>Done</b>: use <code>pip</code> &lt;now&gt;"


async def test_a_streamed_answer_grows_in_one_message_and_ends_formatted(
    start_palui, fake_telegram, fake_model
) -> None:
    answer = "**Plan**: " + " ".join(f"step{n}" for n in range(60))
    slow = asyncio.Event()  # the answer ends once its preview is out (a fast one has none)
    fake_model.queue(Script(text=answer, gate=slow))
    await start_palui()
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "plan my day")
    await fake_telegram.wait_for_request("sendMessage")
    slow.set()
    final = await fake_telegram.wait_for_request(
        "editMessageText", predicate=lambda params: params.get("parse_mode") == "HTML"
    )
    assert final.params["text"].startswith("<b>Plan</b>: step0 step1")
    assert final.params["text"].endswith("step59")
    previews = [r for r in fake_telegram.requests if r.method == "sendMessage"]
    assert len(previews) == 1 and "parse_mode" not in previews[0].params  # plain while growing
    assert len(fake_telegram.sent_messages(OWNER_CHAT)) == 1  # one message, edited in place


async def test_the_fallback_model_answers_when_the_primary_fails(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = lambda request: (
        Script(status=500, error="boom") if request.model == "fake-model" else Script(text="backup")
    )
    await start_palui(PALUI_FALLBACK_MODELS="openai/backup-model")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    assert texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1)) == ["backup"]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("edited", "don't re-run edited messages"), ("photo", "can't see images")],
)
async def test_edits_and_non_text_messages_get_a_note_and_no_turn(
    start_palui, fake_telegram, fake_model, kind: str, expected: str
) -> None:
    await start_palui()
    if kind == "edited":
        fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "changed my mind", edited=True)
    else:
        fake_telegram.push_photo(OWNER_CHAT, OWNER_ID)
    reply = (await fake_telegram.wait_for_messages(OWNER_CHAT, 1))[0]["text"]
    assert expected in reply
    assert fake_model.requests == []
