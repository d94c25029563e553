"""Voice in, voice out: with PALUI_TTS_MODEL, an answer to a voice note is also sent as a voice
message (OGG/Opus from litellm's speech API, the fake model server's `/v1/audio/speech`), after
the text and never instead of it; `/voice off` stops it; a failing speech model leaves the text
alone; a typed message gets text only."""

from __future__ import annotations

import io

from palui.cli.doctor import run_doctor
from palui.db import Database
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.speech import FakeSpeech

AUDIO = b"OggS\x00\x02fake-opus-audio" * 10
VOICE = {"PALUI_TRANSCRIPTION_MODEL": "openai/whisper-1", "PALUI_TTS_MODEL": "openai/tts-1"}


def kinds(messages: list[dict]) -> list[str]:
    return [m.get("text") or ("<voice>" if "voice" in m else "?") for m in messages]


async def test_a_voice_note_gets_a_text_answer_then_the_same_answer_as_a_voice_message(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.transcriptions.text = "what time is it"
    await start_palui(**VOICE)
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_request("sendVoice")
    sent = kinds(fake_telegram.sent_messages(OWNER_CHAT))
    assert sent == ["🎙 “what time is it”", "echo: what time is it", "<voice>"]

    [asked] = fake_model.speech.received
    assert asked.model == "tts-1" and asked.input == "echo: what time is it"
    assert asked.response_format == "opus"  # OGG/Opus: what Telegram plays as a voice message
    assert asked.authorization == "Bearer sk-test-secret-key-0123456789"  # the model's key
    [voice] = fake_telegram.chats.voices
    assert voice.audio == FakeSpeech.audio("echo: what time is it")
    assert voice.audio.startswith(b"OggS") and voice.file_name.endswith(".ogg")


async def test_voice_off_stops_voice_replies_and_voice_on_brings_them_back(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**VOICE)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/voice off")
    [note] = await fake_telegram.wait_for_messages(OWNER_CHAT, 1)
    assert "off" in note["text"]
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: this is what I said")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "/voice on")
    await fake_telegram.wait_for_text(OWNER_CHAT, "on")
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_request("sendVoice")
    # Only the second voice note was spoken back.
    assert len(fake_model.speech.received) == 1
    assert len(fake_telegram.chats.voices) == 1
    assert len([r for r in fake_model.requests]) == 2


async def test_a_failing_speech_model_leaves_the_text_answer_alone(
    start_palui, fake_telegram, fake_model
) -> None:
    fake_model.speech.status = 500
    await start_palui(**VOICE)
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: this is what I said")
    # The next answer goes out: the failed voice message held nothing up, and was tried once.
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "fine")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: fine")
    assert len(fake_model.speech.received) == 1
    assert fake_telegram.chats.voices == []
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert texts == ["🎙 “this is what I said”", "echo: this is what I said", "echo: fine"]


async def test_a_typed_message_and_a_long_answer_get_no_voice_message(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(**VOICE, PALUI_MEDIA__VOICE_REPLY_CHARS="20")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: hi")
    fake_model.transcriptions.text = "a voice note whose echo is longer than twenty"
    fake_telegram.files.push_voice(OWNER_CHAT, OWNER_ID, AUDIO)
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: a voice note")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "bye")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo: bye")
    assert fake_model.speech.received == [] and fake_telegram.chats.voices == []


async def test_doctor_checks_the_transcription_and_speech_models_when_set(
    settings_env, fake_model, fake_telegram, monkeypatch
) -> None:
    for key, value in VOICE.items():
        monkeypatch.setenv(key, value)
    db = Database(settings_env["PALUI_DATABASE_URL"])
    await db.migrate()
    await db.close()
    out = io.StringIO()
    assert await run_doctor(None, out) == 0, out.getvalue()
    report = out.getvalue()
    assert "✅ transcription: openai/whisper-1 answered" in report
    assert "✅ speech: openai/tts-1 answered (OGG/Opus)" in report
    assert fake_model.transcriptions.received[0].file_name == "doctor.wav"

    fake_model.speech.status = 401
    fake_model.transcriptions.status = 500
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    report = out.getvalue()
    assert "❌ transcription:" in report and "❌ speech:" in report
    assert "fix: Check PALUI_TTS_MODEL" in report and "2 problem(s) found." in report
