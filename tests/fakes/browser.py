"""A real headless Chromium for the web console's tests: Debian's `chromium` package driven by
Playwright's Python package (no browser download). Tests using `browser` skip without either.

Screenshots are taken of every page a test visits (`shoot`); they are written to
`docs/screenshots/` when WEB_CONSOLE_SCREENSHOTS=1 (the README's tour), else into the test's
temporary directory, so an ordinary run leaves the tree as it was."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
DOCS = Path(__file__).parents[2] / "docs" / "screenshots"


def chromium_missing() -> str | None:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "Playwright's Python package is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    from playwright.async_api import async_playwright

    # As root Chromium refuses its own sandbox; the pages are Palui's own, served on loopback.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as driver:
        launched = await driver.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield launched
        finally:
            await launched.close()


class Shots:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    async def shoot(self, page: Any, name: str) -> Path:
        path = self.folder / f"{name}.png"
        await page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    return Shots(DOCS if os.environ.get("WEB_CONSOLE_SCREENSHOTS") == "1" else tmp_path / "shots")
