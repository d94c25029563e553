"""Log lines carry ids and never carry secrets."""

from __future__ import annotations

import io
import json
import logging

from palui.logs import bound, configure_logging, get_logger

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
API_KEY = "sk-live-0123456789abcdefghij"


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_secrets_are_redacted_from_palui_and_library_lines() -> None:
    stream = io.StringIO()
    configure_logging("json", "debug", secrets=[API_KEY], stream=stream)
    log = get_logger("palui.test")
    log.info("calling", url=f"https://api.telegram.org/bot{TOKEN}/getMe", note=f"key {API_KEY}")
    logging.getLogger("some.library").warning("POST https://x/bot%s/sendMessage", TOKEN)
    log.info("config", model_api_key="anything-at-all")
    out = stream.getvalue()
    assert TOKEN not in out
    assert API_KEY not in out
    assert "anything-at-all" not in out
    assert out.count("[redacted]") >= 4


def test_every_line_in_a_turn_carries_chat_and_turn_ids() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    with bound(chat_id=42, turn_id="abc"):
        get_logger("palui.test").info("turn_started")
    get_logger("palui.test").info("outside")
    inside, outside = lines(stream)
    assert (inside["chat_id"], inside["turn_id"], inside["event"]) == (42, "abc", "turn_started")
    assert "chat_id" not in outside


def test_console_format_is_plain_text() -> None:
    stream = io.StringIO()
    configure_logging("console", "info", stream=stream)
    get_logger("palui.test").info("hello", chat_id=7)
    text = stream.getvalue()
    assert "hello" in text and "chat_id=7" in text
    assert not text.lstrip().startswith("{")
