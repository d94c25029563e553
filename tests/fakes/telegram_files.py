"""Files behind the fake Bot API: `getFile`, downloads from `/file/bot<token>/<file_path>`, and
messages that carry a voice note, a photo or a document.

    file_id = fake.files.put(b"...", file_name="notes.txt")
    fake.files.push_document(chat_id, user_id, b"hello", "notes.txt", "text/plain")
    fake.files.downloads  # file paths fetched, in order

Like Telegram, `getFile` refuses a file past 20 MB ("file is too big"); `reported_size` lets a
message claim a size other than the bytes held (a file Telegram says is large).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.telegram_chats import FakeChats, bad_request

__all__ = ["FakeFiles", "StoredFile"]

TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024


@dataclass(frozen=True)
class StoredFile:
    file_id: str
    file_path: str
    data: bytes
    size: int  # what Telegram reports


class FakeFiles:
    def __init__(
        self, token: str, chats: FakeChats, push_update: Callable[[dict[str, Any]], int]
    ) -> None:
        self._token = token
        self._chats = chats
        self._push = push_update
        self._files: dict[str, StoredFile] = {}
        self._ids = itertools.count(1)
        self.downloads: list[str] = []  # file paths fetched, in order

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {"getfile": self.api_get_file}

    def add_routes(self, app: web.Application) -> None:
        """Register before the Bot API's catch-all route."""
        app.router.add_get("/file/bot{token}/{file_path:.*}", self._download)

    # --- test side ----------------------------------------------------------------------

    def put(self, data: bytes, *, file_name: str = "file", reported_size: int | None = None) -> str:
        number = next(self._ids)
        file_id = f"file-{number}"
        size = len(data) if reported_size is None else reported_size
        self._files[file_id] = StoredFile(file_id, f"documents/{number}-{file_name}", data, size)
        return file_id

    def push_voice(
        self, chat_id: int, user_id: int, data: bytes, *, duration: int = 3, audio: bool = False
    ) -> int:
        """A voice note (or, with `audio`, an audio file); returns the update_id."""
        file_id = self.put(data, file_name="voice.ogg")
        message = self._message(chat_id, user_id, None)
        if audio:
            message["audio"] = {
                **_file(file_id, len(data)), "duration": duration, "mime_type": "audio/mpeg",
                "file_name": "memo.mp3",
            }  # fmt: skip
        else:
            message["voice"] = {**_file(file_id, len(data)), "duration": duration}
            message["voice"]["mime_type"] = "audio/ogg"
        return self._push({"message": message})

    def push_photo(
        self,
        chat_id: int,
        user_id: int,
        sizes: Sequence[bytes],
        *,
        caption: str | None = None,
        reported_size: int | None = None,
    ) -> int:
        """A photo in several sizes, smallest first, as Telegram sends them."""
        photo = []
        for index, data in enumerate(sizes):
            size = reported_size if reported_size is not None and index == len(sizes) - 1 else None
            file_id = self.put(data, file_name=f"photo{index}.jpg", reported_size=size)
            side = 90 * (index + 1)
            photo.append({**_file(file_id, size or len(data)), "width": side, "height": side})
        message = self._message(chat_id, user_id, caption)
        message["photo"] = photo
        return self._push({"message": message})

    def push_document(
        self,
        chat_id: int,
        user_id: int,
        data: bytes,
        file_name: str,
        mime_type: str | None,
        *,
        caption: str | None = None,
        reported_size: int | None = None,
    ) -> int:
        file_id = self.put(data, file_name=file_name, reported_size=reported_size)
        message = self._message(chat_id, user_id, caption)
        document = {**_file(file_id, self._files[file_id].size), "file_name": file_name}
        if mime_type:
            document["mime_type"] = mime_type
        message["document"] = document
        return self._push({"message": message})

    def push_raw_document(self, chat_id: int, user_id: int, document: dict[str, Any]) -> int:
        """A document message exactly as given (e.g. without a `file_size`)."""
        message = self._message(chat_id, user_id, None)
        message["document"] = document
        return self._push({"message": message})

    # --- Bot API ------------------------------------------------------------------------

    def api_get_file(self, params: dict[str, Any]) -> dict[str, Any]:
        stored = self._files.get(str(params.get("file_id")))
        if stored is None:
            raise bad_request("invalid file_id")
        if stored.size > TELEGRAM_DOWNLOAD_LIMIT:
            raise bad_request("file is too big")
        return {**_file(stored.file_id, stored.size), "file_path": stored.file_path}

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self._token:
            return web.Response(status=401, text="Unauthorized")
        path = request.match_info["file_path"]
        stored = next((f for f in self._files.values() if f.file_path == path), None)
        if stored is None:
            return web.Response(status=404, text="Not Found")
        self.downloads.append(path)
        return web.Response(body=stored.data, content_type="application/octet-stream")

    def _message(self, chat_id: int, user_id: int, caption: str | None) -> dict[str, Any]:
        user = {"id": user_id, "is_bot": False, "first_name": f"User{user_id}"}
        message = self._chats.user_message(chat_id, user, "", "private")
        message.pop("text", None)
        message.pop("entities", None)
        if caption is not None:
            message["caption"] = caption
        return message


def _file(file_id: str, size: int) -> dict[str, Any]:
    return {"file_id": file_id, "file_unique_id": f"u-{file_id}", "file_size": size}
