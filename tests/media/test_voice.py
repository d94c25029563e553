"""Voice notes and audio: transcribed through litellm's transcription API (the fake model server's
`/v1/audio/transcriptions`), answered, kept in history as the person's own words; without a
transcription model or when it fails, a reply that says how to turn it on, and nothing runs."""

from __future__ import annotations

import json

from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.model_server import ModelRequest, Script

AUDIO = b"OggS\x00\x02fake-opus-audio" * 10
WHISPER = {"PALUI_TRANSCRIPTION_MODEL": "openai/whisper-1"}


def texts(messages: list[dict]) -> list[str]:
    return [m["text"] for m in messages]


async def test_a_voice_note_is_transcribed_answered_and_kept_in_history(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.transcriptions.text = "remind me to buy milk"
    await start_palui(**WHISPER)
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    replies = await fake_telegram.wait_for_messages(OWNER_CHAT, 2)
    # The quote of what was heard comes first, then the answer to it.
    assert texts(replies) == ["🎙 “remind me to buy milk”", "echo: remind me to buy milk"]

    [upload] = fake_model.transcriptions.received
    assert upload.audio == AUDIO and upload.model == "whisper-1"
    # Its api base and key default to the model's.
    assert upload.authorization == "Bearer sk-test-secret-key-0123456789"
    assert fake_model.requests[0].last_user_text == "remind me to buy milk"

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "what did I say?")
    await fake_telegram.wait_for_messages(OWNER_CHAT, 3)
    history = [(m["role"], m["content"]) for m in fake_model.requests[1].messages[1:]]
    assert history == [
        ("user", "remind me to buy milk"),
        ("assistant", "echo: remind me to buy milk"),
        ("user", "what did I say?"),
    ]
    assert len(fake_model.transcriptions.received) == 1


async def test_an_audio_file_is_transcribed_with_its_own_api_key(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.transcriptions.text = "meeting notes"
    await start_palui(**WHISPER, PALUI_TRANSCRIPTION_API_KEY="sk-transcribe-only-987654")
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO, audio=True)
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: I sent you an audio file.")
    [upload] = fake_model.transcriptions.received
    assert upload.authorization == "Bearer sk-transcribe-only-987654"
    assert upload.file_name == "memo.mp3"


async def test_without_a_transcription_model_a_voice_note_gets_how_to_turn_it_on(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui()
    update_id = fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    [note] = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1))
    assert "PALUI_TRANSCRIPTION_MODEL" in note
    await fake_telegram.wait_until_confirmed(update_id)

    # Handled once: the next message is answered alone, the voice note gets no second reply.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "ok, typing then")
    replies = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 2))
    assert replies[1] == "echo: ok, typing then"
    assert fake_telegram.files.downloads == []  # nothing was fetched for it
    assert fake_model.transcriptions.received == []
    assert len(fake_model.requests) == 1


async def test_a_failing_transcription_gets_a_clear_reply_and_runs_no_turn(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.transcriptions.status = 500
    await start_palui(**WHISPER)
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    [note] = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1))
    assert "couldn't transcribe" in note and "PALUI_TRANSCRIPTION_MODEL" in note
    assert "sk-test-secret-key" not in note

    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hello")
    replies = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 2))
    assert replies[1] == "echo: hello"
    assert len(fake_model.transcriptions.received) == 1  # not retried on the next turn
    assert [r.last_user_text for r in fake_model.requests] == ["hello"]


async def test_after_a_voice_note_a_write_runs_at_once(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    """The transcript is the person's own words: the turn is not tainted, so the write the
    voice note asked for runs without a card."""
    fake_model.transcriptions.text = "add a note: eggs, 12"

    def brain(request: ModelRequest) -> Script:
        if not [m for m in request.messages if m["role"] == "tool"]:
            arguments = json.dumps({"title": "eggs", "body": "12"})
            return Script(tool_calls=[("mcp-notes__add_note", arguments)])
        return Script(text="Added.")

    fake_model.brain = brain
    await start_palui(**WHISPER)
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_text(OWNER_CHAT, "Added.")
    sent = texts(fake_telegram.sent_messages(OWNER_CHAT))
    assert not [text for text in sent if "Approval needed" in text]
    notes = json.loads(with_notes.read_text())
    assert [n["title"] for n in notes.values()] == ["Groceries", "eggs"]
