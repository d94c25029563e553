"""The fake model server's OpenAI-compatible `POST /v1/audio/speech` (JSON: model, input,
voice, response_format): it records each request and answers audio bytes (or an error status).
For `response_format="opus"` the bytes start with `OggS`, as an OGG/Opus file does.

    fake_model.speech.status = 500  # a failing speech endpoint
    ...
    [asked] = fake_model.speech.received
    assert asked.input == "echo: hi" and asked.response_format == "opus"
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

__all__ = ["FakeSpeech", "SpeechRequest"]

OGG_OPUS = b"OggS\x00\x02" + b"\x00" * 20 + b"OpusHead\x01\x01"  # an OGG page holding Opus
CONTENT_TYPES = {"opus": "audio/ogg", "mp3": "audio/mpeg", "wav": "audio/wav"}


@dataclass(frozen=True)
class SpeechRequest:
    model: str
    input: str
    voice: str | None
    response_format: str | None
    authorization: str | None = None


@dataclass
class FakeSpeech:
    status: int = 200  # not 200: answer an error with `error`
    error: str = "speech failed"
    received: list[SpeechRequest] = field(default_factory=list)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/audio/speech", self._speak)
        app.router.add_post("/audio/speech", self._speak)

    @staticmethod
    def audio(text: str, response_format: str | None = "opus") -> bytes:
        """The bytes answered for `text` (a test compares what Telegram got with them)."""
        head = OGG_OPUS if response_format in (None, "opus") else b"ID3"
        return head + text.encode()

    async def _speak(self, request: web.Request) -> web.Response:
        body = await request.json()
        asked = SpeechRequest(
            str(body.get("model", "")), str(body.get("input", "")), body.get("voice"),
            body.get("response_format"), request.headers.get("Authorization"),
        )  # fmt: skip
        self.received.append(asked)
        if self.status != 200:
            error = {"error": {"message": self.error, "type": "server_error", "code": None}}
            return web.json_response(error, status=self.status)
        fmt = asked.response_format or "mp3"
        return web.Response(
            body=self.audio(asked.input, fmt),
            content_type=CONTENT_TYPES.get(fmt, "application/octet-stream"),
        )
