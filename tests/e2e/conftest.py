"""Fixtures shared by the tests in this folder."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.toolkit import Daemon, WebhookDaemon


@pytest.fixture
async def daemon(settings_env: dict[str, str], tmp_path) -> AsyncIterator[Daemon]:
    # The test's own PALUI_* settings (monkeypatched into os.environ) go to the daemon too.
    env = dict(os.environ)
    env.update(settings_env)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    proc = Daemon(env, str(tmp_path))
    yield proc
    await proc.stop()


@pytest.fixture
async def daemons(settings_env: dict[str, str], tmp_path: Path) -> AsyncIterator[Any]:
    env = dict(os.environ) | settings_env | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started: list[WebhookDaemon] = []

    def make() -> WebhookDaemon:
        daemon = WebhookDaemon(env, str(tmp_path))
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        await daemon.stop()
