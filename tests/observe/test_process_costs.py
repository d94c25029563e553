"""What the daemon costs its host, said where people look: `/healthz` carries the process's
resident memory and how long it took from its start to polling and to serving, `palui doctor`
prints them; the model's warm-up loads nothing a real call would not (tiktoken's tables are
~48 MB); a model call skips litellm's logging payload, built for callbacks Palui never
registers; and the leases' cheaper write path still waits its turn for another process's write
lock."""

from __future__ import annotations

import asyncio
import gc
import io
import os
import sqlite3
import subprocess
import sys
import textwrap
from typing import Any

import aiohttp
import pytest

from palui.cli.doctor import run_doctor
from palui.domain import Message, Role
from palui.llm import ModelClient
from tests.fakes.model_server import Script


async def serving(start_palui: Any, fake_telegram: Any) -> Any:
    palui = await start_palui()
    await palui.app.serving.wait()  # serving: the HTTP server listens (polling began before)
    assert palui.app.http is not None
    return palui.app


async def test_healthz_and_doctor_say_what_the_process_holds_and_how_fast_it_started(
    start_palui, fake_telegram, monkeypatch
) -> None:
    app = await serving(start_palui, fake_telegram)
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{app.http.url}/healthz") as response,
    ):
        process = (await response.json())["process"]
    assert process["rss_mb"] > 0
    assert process["peak_rss_mb"] >= process["rss_mb"]
    assert process["ready_in_s"] > 0  # this test process's age when the app began serving
    assert 0 < process["polling_in_s"] <= process["ready_in_s"]  # it polled first
    # What start-up loaded is out of the collector's way while serving (unfrozen at stop).
    assert gc.get_freeze_count() > 100_000

    monkeypatch.setenv("PALUI_HTTP_PORT", str(app.http.port))  # where doctor finds the daemon
    out = io.StringIO()
    await run_doctor(None, out)
    line = next(x for x in out.getvalue().splitlines() if "palui run answers on" in x)
    assert "MB resident (peak " in line
    assert "polling Telegram " in line and "serving " in line


def test_the_litellm_warm_up_of_an_openai_style_model_loads_no_tokenizer(fake_model) -> None:
    # A process of its own: this one may have loaded tiktoken for another test already.
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from palui.llm import ModelClient
        model = ModelClient("openai/fake-model", api_base={fake_model.api_base!r},
                             api_key="sk-test", via_litellm=True)
        asyncio.run(model.warm_up())
        assert "litellm" in sys.modules  # the warm-up did run
        print("tiktoken_ext.openai_public" in sys.modules)
        """
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
    assert fake_model.requests == []  # it never left the process


async def test_a_model_call_builds_no_logging_payload_for_callbacks_nobody_registered(
    fake_model, monkeypatch
) -> None:
    model = ModelClient(
        "openai/fake-model", api_base=fake_model.api_base, api_key="sk-test", via_litellm=True
    )
    await model.warm_up()  # litellm imported and set up as Palui sets it up
    from litellm.litellm_core_utils import litellm_logging

    built: list[object] = []
    builder = litellm_logging.get_standard_logging_object_payload

    def counting_builder(*args: Any, **kwargs: Any) -> Any:
        built.append(kwargs.get("init_response_obj"))
        return builder(*args, **kwargs)

    monkeypatch.setattr(litellm_logging, "get_standard_logging_object_payload", counting_builder)
    handled: list[object] = []
    both_handled = asyncio.Event()
    handler = litellm_logging.Logging.async_success_handler

    async def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await handler(self, *args, **kwargs)
        finally:
            handled.append(self)
            if len(handled) == 2:
                both_handled.set()

    monkeypatch.setattr(litellm_logging.Logging, "async_success_handler", observed)
    fake_model.queue(Script(text="streamed", usage=(7, 3)), Script(text="whole", usage=(5, 2)))

    async def on_delta(_text: str) -> None:
        pass

    streamed = await model.complete([Message(Role.USER, "hi")], on_delta=on_delta)
    whole = await model.complete([Message(Role.USER, "hi again")])
    async with asyncio.timeout(60):
        await both_handled.wait()  # litellm's success handling ran for both calls
    assert built == []
    # Usage still comes from the answers themselves.
    assert (streamed.content, streamed.usage.prompt_tokens) == ("streamed", 7)
    assert (whole.content, whole.usage.completion_tokens) == ("whole", 2)


async def test_a_lease_taken_while_another_process_writes_waits_its_turn(
    store, monkeypatch
) -> None:
    """Leases are written on a connection without a session (cheaper): on SQLite that write
    still waits, the event loop free, for a write lock another process holds."""
    if store.db.file is None:
        pytest.skip("SQLite's write lock only")
    import palui.db.writes as writes

    found_locked = asyncio.Event()
    is_locked = writes.is_locked

    def noting(exc: BaseException) -> bool:
        locked = is_locked(exc)
        if locked:
            found_locked.set()
        return locked

    monkeypatch.setattr(writes, "is_locked", noting)
    other = sqlite3.connect(store.db.file, isolation_level=None)  # another process, in effect
    try:
        other.execute("BEGIN IMMEDIATE")
        taking = asyncio.create_task(store.leases.take(7, "a:1:x", ttl_s=60))
        async with asyncio.timeout(60):
            await found_locked.wait()
        assert not taking.done()
        other.execute("COMMIT")
        fence = await taking
    finally:
        other.close()
    assert fence is not None and fence.generation == 1
