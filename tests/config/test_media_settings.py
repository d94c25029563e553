"""`[media]` and the transcription settings: read from the file, the environment wins, a size
past Telegram's 20 MB is refused in one line, the transcription key is redacted."""

from __future__ import annotations

from pathlib import Path

import pytest

from palui.config import load_settings
from palui.config.secrets import configured_secrets
from palui.errors import ConfigError


def write_config(tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "palui.toml"
    path.write_text(text)
    monkeypatch.setenv("PALUI_CONFIG", str(path))
    return path


def test_media_limits_come_from_the_file_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(tmp_path, "[media]\nmax_bytes = 5000\nmax_document_chars = 900\n", monkeypatch)
    monkeypatch.setenv("PALUI_MEDIA__MAX_BYTES", "7000")
    monkeypatch.setenv("PALUI_MEDIA__DOCUMENT_TIMEOUT_S", "3")
    settings = load_settings()
    assert settings.media.max_bytes == 7000
    assert settings.media.max_document_chars == 900
    assert settings.media.document_timeout_s == 3
    # The PDF child's other limits keep their defaults.
    assert (settings.media.max_document_pages, settings.media.document_memory_mb) == (200, 256)


def test_a_max_bytes_past_telegrams_limit_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(tmp_path, "[media]\nmax_bytes = 30000000\n", monkeypatch)
    with pytest.raises(ConfigError, match=r"^\[media\] max_bytes in .*palui.toml: "):
        load_settings()


def test_the_transcription_key_is_a_secret_the_logs_redact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PALUI_TRANSCRIPTION_MODEL", "openai/whisper-1")
    monkeypatch.setenv("PALUI_TRANSCRIPTION_API_KEY", "sk-transcribe-0123456789")
    monkeypatch.setenv("PALUI_MODEL_VISION", "false")
    settings = load_settings()
    assert settings.model_vision is False
    assert "sk-transcribe-0123456789" in configured_secrets(settings, environ={})
