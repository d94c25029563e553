"""Shared fixtures: no network, clean environment, both databases, the fakes, a running Palui."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from palui.db import Database, Store
from palui.db.engine import migrations_dir
from tests.fakes.network import is_loopback

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["PTB_TIMEDELTA"] = "1"  # as palui.cli.main sets it


POSTGRES_ADMIN_DSN = os.environ.get(
    "PALUI_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
OWNER_ID = 1001
OWNER_CHAT = 1001


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a non-loopback address fails the test loudly."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guard(address: Any) -> None:
        if not is_loopback(address):
            raise AssertionError(f"test tried to reach the network: {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        guard(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        guard(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests see no PALUI_* variables of the machine, and no config/palui.toml of the repo."""
    for name in list(os.environ):
        if name.startswith("PALUI_") and name != "PALUI_TEST_POSTGRES":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _postgres_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


def _migrations_fingerprint() -> str:
    """Changes whenever a migration does, so a template is never older than the scripts."""
    digest = hashlib.sha256()
    for script in sorted(migrations_dir().rglob("*.py")):
        digest.update(script.name.encode())
        digest.update(script.read_bytes())
    return digest.hexdigest()[:10]


def _migrate_in_a_thread(url: str) -> None:
    # Session fixtures are synchronous; a thread of its own gives the migration an event loop
    # without touching the loop pytest-asyncio runs the tests in.
    async def migrate() -> None:
        db = Database(url)
        try:
            await db.migrate()
        finally:
            await db.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, migrate()).result()


async def _postgres_admin(*statements: str) -> None:
    admin = await asyncpg.connect(POSTGRES_ADMIN_DSN)
    try:
        for statement in statements:
            await admin.execute(statement)
    finally:
        await admin.close()


def _postgres_url(name: str) -> str:
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}"


class MigratedTemplates:
    """One migrated database per kind and test process, copied for each test that wants one.

    Running the eleven Alembic revisions for every test cost seconds per PostgreSQL test; a copy
    costs a file copy (SQLite) or `CREATE DATABASE … TEMPLATE` (PostgreSQL). Tests about the
    migrations themselves ask for an empty database (`@pytest.mark.empty_database`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # One template per xdist worker: PostgreSQL copies a template only while nobody else
        # is connected to it, so workers must not share one.
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.postgres_name = f"palui_template_{_migrations_fingerprint()}_{worker}"
        self._sqlite: Path | None = None
        self._postgres_ready = False

    def sqlite_file(self) -> Path:
        if self._sqlite is None:
            path = self.directory / "template.db"
            _migrate_in_a_thread(f"sqlite+aiosqlite:///{path}")
            self._sqlite = path
        return self._sqlite

    def postgres(self) -> str:
        if not self._postgres_ready:
            with ThreadPoolExecutor(1) as pool:
                pool.submit(
                    asyncio.run,
                    _postgres_admin(
                        f'DROP DATABASE IF EXISTS "{self.postgres_name}" WITH (FORCE)',
                        f'CREATE DATABASE "{self.postgres_name}"',
                    ),
                ).result()
            _migrate_in_a_thread(_postgres_url(self.postgres_name))
            self._postgres_ready = True
        return self.postgres_name

    def drop(self) -> None:
        if self._postgres_ready:
            with ThreadPoolExecutor(1) as pool:
                pool.submit(
                    asyncio.run,
                    _postgres_admin(f'DROP DATABASE IF EXISTS "{self.postgres_name}" WITH (FORCE)'),
                ).result()


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MigratedTemplates]:
    templates = MigratedTemplates(tmp_path_factory.mktemp("templates"))
    yield templates
    templates.drop()


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, migrated_templates: MigratedTemplates
) -> AsyncIterator[str]:
    """A fresh database of each kind, already at the newest schema (a copy of a migrated
    template); empty instead for a test marked `empty_database`."""
    empty = request.node.get_closest_marker("empty_database") is not None
    if request.param == "sqlite":
        path = tmp_path / "palui.db"
        if not empty:
            shutil.copyfile(migrated_templates.sqlite_file(), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    if not _postgres_available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not running on 127.0.0.1:5432")
        pytest.skip("PostgreSQL is not running on 127.0.0.1:5432")
    name = f"palui_test_{uuid.uuid4().hex[:12]}"
    template = "" if empty else f' TEMPLATE "{migrated_templates.postgres()}"'
    await _postgres_admin(f'CREATE DATABASE "{name}"{template}')
    yield _postgres_url(name)
    await _postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Any]:
    """The repositories over a fresh database at the newest schema (each kind)."""
    db = Database(database_url)
    await db.migrate()  # a no-op on the migrated copy; migrates a test's `empty_database`
    yield Store(db)
    await db.close()


@pytest.fixture
async def fake_telegram() -> AsyncIterator[Any]:
    from tests.fakes.telegram_api import FakeTelegram

    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def fake_model() -> AsyncIterator[Any]:
    from tests.fakes.model_server import FakeModel

    async with FakeModel() as fake:
        yield fake


@pytest.fixture
def settings_env(
    monkeypatch: pytest.MonkeyPatch,
    database_url: str,
    fake_telegram: Any,
    fake_model: Any,
    tmp_path: Path,
) -> Iterator[dict[str, str]]:
    """The environment of a Palui wired to the fakes; tests may add to it before starting."""
    env = {
        "PALUI_TELEGRAM_TOKEN": fake_telegram.token,
        "PALUI_TELEGRAM_API_URL": fake_telegram.url,
        "PALUI_ALLOWED_USERS": str(OWNER_ID),
        "PALUI_MODEL": "openai/fake-model",
        "PALUI_MODEL_API_BASE": fake_model.api_base,
        "PALUI_MODEL_API_KEY": "sk-test-secret-key-0123456789",
        "PALUI_DATABASE_URL": database_url,
        "PALUI_DATA_DIR": str(tmp_path / "data"),
        # Long-term memory (a recall server process) is off unless a test is about it.
        "PALUI_RECALL__ENABLED": "false",
        "PALUI_HTTP_PORT": "0",  # Palui's HTTP server on a free port (tests run side by side)
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env


class RunningPalui:
    """`palui run` in this process: the real app against the fakes."""

    def __init__(self, app: Any, task: asyncio.Task[None], stop: asyncio.Event) -> None:
        self.app = app
        self.task = task
        self.stop = stop


# In-process Palui paces its sends a little faster than Telegram asks (one message per chat per
# second), so a test that exchanges many messages doesn't spend most of its time waiting. Order
# and every other rule are unchanged; the pacing itself is tested in tests/test_ratelimit.py, and
# a test marked `production_pace` keeps Telegram's real limits.
TEST_PACE = {"per_chat_interval": 0.05, "group_per_minute": 600, "global_per_second": 300}


@pytest.fixture
def test_pace(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("production_pace"):
        return
    import functools

    import palui.app
    from palui.channels.ratelimit import SendLimits, SendRateLimiter

    channel = palui.app.TelegramChannel

    def paced(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("limiter", SendRateLimiter(SendLimits(**TEST_PACE)))
        return channel(*args, **kwargs)

    monkeypatch.setattr(palui.app, "TelegramChannel", functools.wraps(channel)(paced))


@pytest.fixture
async def start_palui(settings_env: dict[str, str], test_pace: None) -> AsyncIterator[Any]:
    """Call `await start_palui()` (after adjusting env) to get a running Palui."""
    from palui.app import Palui
    from palui.config import load_settings

    running: list[tuple[Any, RunningPalui]] = []

    async def start(**overrides: str) -> RunningPalui:
        for key, value in overrides.items():
            os.environ[key] = value
        app = Palui(load_settings())
        await app.__aenter__()
        stop = asyncio.Event()
        task = asyncio.create_task(app.serve_telegram(stop))
        handle = RunningPalui(app, task, stop)
        running.append((app, handle))
        return handle

    yield start
    for app, handle in running:
        handle.stop.set()
        await asyncio.wait_for(handle.task, 15)
        await app.__aexit__(None, None, None)


NOTES_SERVER = Path(__file__).parent / "servers" / "notes_server.py"


@pytest.fixture
def notes_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.json"
    path.write_text(json.dumps({"1": {"title": "Groceries", "body": "milk"}}))
    return path


@pytest.fixture
def with_notes(tmp_path: Path, notes_file: Path, monkeypatch) -> Path:
    """A palui.toml that declares the notes server (untrusted, writes switched on)."""
    config = tmp_path / "palui.toml"
    config.write_text(
        "[mcp.notes]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(NOTES_SERVER))}]\n"
        f"env = {{ NOTES_FILE = {json.dumps(str(notes_file))} }}\n"
        'enable = ["add_note", "delete_note", "redefine_search"]\n'
    )
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    return notes_file
