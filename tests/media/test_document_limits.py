"""A PDF is read in a child process under `[media]` limits: at most `max_document_pages` pages and
`max_document_chars` characters are extracted; past `document_timeout_s` the child is killed,
past `document_memory_mb` it stops with a MemoryError; either way the person gets a clear reply,
no turn runs, and the daemon goes on. The bombs share one content stream across their pages
(tests/fakes/pdf_bomb.py); what they cost before and after: bench/page_bomb.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from palui.media import child
from palui.media.child import ChildLimits, Unreadable, read_pdf
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.pdf_bomb import page_bomb
from tests.toolkit import fenced_words, texts, user_contents

# 200 pages of 20,000 empty strings: no text at all, minutes of parsing (28 KB).
PARSING_BOMB = (200, 20_000, 0)
# 2 pages of 200 strings of 200,000 characters: 40 M characters a page (40 KB).
MEMORY_BOMB = (2, 200, 200_000)


def limits(**changes: Any) -> ChildLimits:
    values: dict[str, Any] = {"max_chars": 20_000, "max_pages": 200, "timeout_s": 30.0}
    return ChildLimits(**{**values, "memory_mb": 256, **changes})


async def test_a_page_bomb_gets_a_clear_reply_and_the_chat_goes_on(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(PALUI_MEDIA__DOCUMENT_TIMEOUT_S="1")
    bomb = page_bomb(*PARSING_BOMB)
    update_id = fake_telegram.files.push_document(
        OWNER_CHAT, OWNER_ID, bomb, "report.pdf", "application/pdf", caption="summarise"
    )
    [note] = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1))
    assert note == "I couldn't read report.pdf: it took too long to read (more than 1 s)."
    await fake_telegram.wait_until_confirmed(update_id)
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "never mind")
    replies = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 2))
    assert replies[1] == "echo: never mind"
    assert len(fake_model.requests) == 1  # the file ran no turn


async def test_a_pdf_past_the_memory_limit_is_too_large(
    start_palui, fake_telegram, fake_model
) -> None:
    await start_palui(PALUI_MEDIA__DOCUMENT_MEMORY_MB="128")
    bomb = page_bomb(*MEMORY_BOMB)
    fake_telegram.files.push_document(OWNER_CHAT, OWNER_ID, bomb, "big.pdf", "application/pdf")
    [note] = texts(await fake_telegram.wait_for_messages(OWNER_CHAT, 1))
    assert note == "I couldn't read big.pdf: it is too large to read (it needs more than 128 MB)."
    assert fake_model.requests == []


async def test_a_pdf_is_read_up_to_the_page_cap(start_palui, fake_telegram, fake_model) -> None:
    await start_palui(PALUI_MEDIA__MAX_DOCUMENT_PAGES="2")
    pdf = page_bomb(5, 1, 3)  # five pages that each say "xxx"
    fake_telegram.files.push_document(OWNER_CHAT, OWNER_ID, pdf, "five.pdf", "application/pdf")
    await fake_telegram.wait_for_text(OWNER_CHAT, "echo:")
    words = fenced_words(user_contents(fake_model.requests[0])[0])
    assert words == (
        "[page 1]\nxxx\n\n[page 2]\nxxx\n"
        "[… cut here: the document has 5 pages; only the first 2 were read]"
    )


async def test_a_pdfs_text_stops_at_max_document_chars() -> None:
    pdf = await read_pdf(page_bomb(300, 1, 500), limits(max_chars=1_000))
    assert len(pdf.text) == 1_000 and pdf.more and pdf.pages == 300
    assert pdf.read == 2  # the pages after the cap were never extracted


async def test_a_child_past_its_time_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[asyncio.subprocess.Process] = []
    spawn = asyncio.create_subprocess_exec

    async def spawned(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        started.append(await spawn(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(child.asyncio, "create_subprocess_exec", spawned)
    with pytest.raises(Unreadable, match=r"^it took too long to read \(more than 0.5 s\)$"):
        await read_pdf(page_bomb(*PARSING_BOMB), limits(timeout_s=0.5))
    [proc] = started
    assert proc.returncode == -9  # killed, not left running


async def test_the_child_gets_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that subverts the parser finds no token or key in the child's environment."""
    seen: list[dict[str, Any]] = []
    spawn = asyncio.create_subprocess_exec

    async def spawned(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        seen.append(kwargs)
        return await spawn(*args, **kwargs)

    monkeypatch.setenv("PALUI_TELEGRAM_TOKEN", "123:secret")
    monkeypatch.setattr(child.asyncio, "create_subprocess_exec", spawned)
    pdf = await read_pdf(page_bomb(1, 1, 3), limits())
    assert pdf.text == "[page 1]\nxxx"
    assert seen[0]["env"] == {}
