"""The fake model server's OpenAI-compatible `POST /v1/audio/transcriptions` (multipart): it
records each upload and answers `{"text": ...}` (or an error status).

    fake_model.transcriptions.text = "buy milk"
    ...
    [upload] = fake_model.transcriptions.received
    assert upload.audio == b"..." and upload.model == "whisper-1"
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import BodyPartReader, web

__all__ = ["FakeTranscriptions", "Upload"]


@dataclass(frozen=True)
class Upload:
    model: str
    audio: bytes
    file_name: str | None
    content_type: str | None
    fields: dict[str, str] = field(default_factory=dict)  # the form's other fields
    authorization: str | None = None


@dataclass
class FakeTranscriptions:
    text: str = "this is what I said"
    status: int = 200  # not 200: answer an error with `error`
    error: str = "transcription failed"
    received: list[Upload] = field(default_factory=list)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/audio/transcriptions", self._transcribe)

    async def _transcribe(self, request: web.Request) -> web.Response:
        reader = await request.multipart()
        fields: dict[str, str] = {}
        audio, name, content_type = b"", None, None
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):  # a nested multipart: not OpenAI's
                continue
            if part.name == "file":
                audio, name = bytes(await part.read()), part.filename
                content_type = part.headers.get("Content-Type")
            elif part.name:
                fields[part.name] = await part.text()
        model = fields.pop("model", "")
        self.received.append(
            Upload(model, audio, name, content_type, fields, request.headers.get("Authorization"))
        )
        if self.status != 200:
            body = {"error": {"message": self.error, "type": "server_error", "code": None}}
            return web.json_response(body, status=self.status)
        if fields.get("response_format") == "text":
            return web.Response(text=self.text)
        return web.json_response({"text": self.text})
