"""`/voice on|off`: whether this chat's answers to voice notes are also sent as voice messages
(with PALUI_TTS_MODEL set; `palui.delivery.spoken`). On by default; the switch is kept on the
chat's row and read by each turn's start."""

from __future__ import annotations

from palui.db import Store
from palui.domain import Inbound

NO_SPEECH = (
    "Voice replies need a speech model: set PALUI_TTS_MODEL (e.g. openai/tts-1; "
    "PALUI_TTS_API_BASE and PALUI_TTS_API_KEY default to the model's)."
)


async def voice_switch(store: Store, inbound: Inbound, *, speaks: bool) -> str:
    words = (inbound.text or "").split()
    wanted = words[1].lower() if len(words) > 1 else ""
    if wanted in ("on", "off"):
        await store.choices.set_voice_replies(inbound.chat_id, wanted == "on")
        state = wanted
    else:
        state = "on" if await store.choices.voice_replies(inbound.chat_id) else "off"
    if state == "on":
        text = "Voice replies are on: I answer a voice note with text, then a voice message."
    else:
        text = "Voice replies are off: I answer voice notes with text only."
    if not wanted:
        text += " Send /voice on or /voice off to change it."
    return text if speaks else f"{text}\n{NO_SPEECH}"
