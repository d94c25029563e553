"""`palui doctor`'s voice checks: the transcription model (PALUI_TRANSCRIPTION_MODEL) is sent
half a second of silence, the speech model (PALUI_TTS_MODEL) asked for two words; each must
answer, and speech must come back as OGG/Opus (what Telegram plays as a voice message)."""

from __future__ import annotations

import io
import wave

from palui.cli.doctor_check import Check
from palui.config import Settings
from palui.errors import PaluiError

SAMPLE_RATE = 16_000


def silence_wav(seconds: float = 0.5) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(SAMPLE_RATE)
        audio.writeframes(b"\x00\x00" * int(SAMPLE_RATE * seconds))
    return out.getvalue()


async def transcription(settings: Settings) -> Check | None:
    from palui.app.parts import build_transcriber

    transcriber = build_transcriber(settings)
    if transcriber is None:
        return None
    try:
        await transcriber.transcribe(silence_wav(), "doctor.wav", "audio/wav")
    except PaluiError as exc:
        fix = "Check PALUI_TRANSCRIPTION_MODEL and its API base and key (default: the model's)."
        return Check("transcription", False, str(exc), fix)
    return Check("transcription", True, f"{transcriber.name} answered")


async def speech(settings: Settings) -> Check | None:
    from palui.app.parts import build_speaker

    speaker = build_speaker(settings)
    if speaker is None:
        return None
    fix = "Check PALUI_TTS_MODEL and its API base and key (they default to the model's)."
    try:
        audio = await speaker.speak("Palui here.")
    except PaluiError as exc:
        return Check("speech", False, str(exc), fix)
    if not audio.startswith(b"OggS"):
        detail = (
            f"{speaker.name} answered, but not with OGG/Opus: Telegram won't play it as a voice"
        )
        return Check("speech", False, detail, "Choose a speech model that can answer in opus.")
    return Check("speech", True, f"{speaker.name} answered (OGG/Opus)")
