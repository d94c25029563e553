"""Fixtures shared by the tests in this folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write a palui.toml with the given sections and point PALUI_CONFIG at it."""

    def write(*sections: str) -> Path:
        config = tmp_path / "palui.toml"
        config.write_text("".join(sections))
        monkeypatch.setenv("PALUI_CONFIG", str(config))
        return config

    return write
