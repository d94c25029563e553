"""An idle `palui run` (started, one turn answered) has not loaded what it loads only when used:
litellm and the OpenAI SDK (the model speaks OpenAI's format: called straight over HTTP),
Alembic and Mako (no migration pending), OpenTelemetry's SDK (no endpoint), PDF reading, the
tokenizer, asyncpg on SQLite. Read from the process itself, started as `palui run` starts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from tests.conftest import OWNER_CHAT, OWNER_ID

# `palui run`, with one addition: SIGUSR1 prints the modules the process holds.
PROBE = """
import json, signal, sys
from palui.cli.main import main

def report(*_):
    print("MODULES " + json.dumps(sorted(sys.modules)), flush=True)

signal.signal(signal.SIGUSR1, report)
sys.exit(main(["run"]))
"""
# litellm (~140 MB) only for a provider outside OpenAI's format; tiktoken comes with it.
LOADED_ONLY_WHEN_USED = (
    "litellm",
    "openai",
    "tiktoken",
    "alembic",
    "mako",
    "opentelemetry.sdk",
    "pypdf",
    "tiktoken_ext",
)


async def modules_reported(stdout: asyncio.StreamReader) -> set[str]:
    while line := await stdout.readline():
        if line.startswith(b"MODULES "):
            return set(json.loads(line.removeprefix(b"MODULES ")))
    raise AssertionError("palui run ended before it reported its modules")


async def test_an_idle_palui_run_has_not_loaded_what_it_loads_only_when_used(
    settings_env, database_url, fake_telegram, fake_model, tmp_path: Path
) -> None:
    env = dict(os.environ) | settings_env | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    fake_model.reply("Hi.")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBE, env=env, cwd=str(tmp_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, limit=2**22,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        await fake_telegram.wait_for_request("getUpdates", timeout=60)
        fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "hi")
        await fake_telegram.wait_for_messages(OWNER_CHAT, 1, timeout=60)
        proc.send_signal(signal.SIGUSR1)
        modules = await asyncio.wait_for(modules_reported(proc.stdout), 60)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await asyncio.wait_for(proc.communicate(), 30)

    assert {"palui.app.root", "palui.llm", "mcp"} <= modules  # it served: the probe saw the daemon
    loaded = sorted(
        m
        for m in modules
        for lazy in LOADED_ONLY_WHEN_USED
        if m == lazy or m.startswith(lazy + ".")
    )
    assert loaded == []
    if database_url.startswith("sqlite"):
        assert not any(m == "asyncpg" or m.startswith("asyncpg.") for m in modules)
