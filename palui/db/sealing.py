"""Sealing secrets kept in the database (connectors' OAuth tokens) with a key kept elsewhere.

The key is PALUI_SECRET_KEY when set (any string: its SHA-256 is the key), else a random key in
the data dir's `secret.key`, created 0600 on first use, so a copy of the database alone reveals
no token. Fernet (AES-128-CBC + HMAC-SHA256) also authenticates: a row sealed under another key,
or altered, opens as None, and the connector is simply not signed in.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from palui.db.files import PRIVATE_FILE, private_dir

KEY_FILE = "secret.key"


class SecretBox:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_passphrase(cls, passphrase: str) -> SecretBox:
        digest = hashlib.sha256(passphrase.encode("utf-8")).digest()
        return cls(base64.urlsafe_b64encode(digest))

    @classmethod
    def from_key_file(cls, data_dir: Path) -> SecretBox:
        """The data dir's key, created (0600, never replaced) when there is none."""
        private_dir(data_dir)
        path = data_dir / KEY_FILE
        if not path.exists():
            # Written whole under another name, then linked: a second process starting at the
            # same moment reads either no file or the whole key, and one key wins.
            draft = data_dir / f".{KEY_FILE}.{os.getpid()}"
            fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
            with os.fdopen(fd, "wb") as file:
                file.write(Fernet.generate_key())
            try:
                os.link(draft, path)
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        return cls(path.read_bytes().strip())

    def seal(self, text: str) -> str:
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def open(self, sealed: str) -> str | None:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode("utf-8")
        except (InvalidToken, ValueError):
            return None
