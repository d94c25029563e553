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

from palui.db import Database, Store, migrations_dir
from tests.fakes.network import is_loopback

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["PTB_TIMEDELTA"] = "1"  # as palui.cli.main sets it


def pytest_configure(config: pytest.Config) -> None:
    # litellm takes seconds to import (tens of seconds on a loaded machine). A running Palui
    # imports it in the background at start; in a test process the first test's first answer
    # would still wait for it, past the tests' waits. Pay it once per test process, up front.
    import litellm  # noqa: F401

    _share_the_default_ssl_context()


def _share_the_default_ssl_context() -> None:
    """Every httpx transport with default verification shares one SSL context.

    Each transport otherwise loads certifi's CA bundle into a context of its own (about 20 ms of
    CPU), and every Palui a test starts builds two (the Bot API client's); no test speaks TLS
    (the network is off), and a shared, unchanged default context verifies as a fresh one does."""
    import httpx._transports.default as transports

    create = transports.create_ssl_context
    shared: list[Any] = []

    def create_once(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        custom = trust_env and (os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"))
        if verify is not True or cert is not None or custom:
            return create(verify=verify, cert=cert, trust_env=trust_env)
        if not shared:
            shared.append(create())
        return shared[0]

    transports.create_ssl_context = create_once  # type: ignore[assignment]


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


async def _postgres_admin(*statements: str, database: str | None = None) -> list[Any]:
    """Run `statements` on the admin database (or `database`); the last one's rows."""
    dsn = POSTGRES_ADMIN_DSN if database is None else POSTGRES_ADMIN_DSN.rsplit("/", 1)[0]
    admin = await asyncpg.connect(dsn if database is None else f"{dsn}/{database}")
    try:
        rows: list[Any] = []
        for statement in statements:
            if statement.startswith("SELECT"):
                rows = await admin.fetch(statement)
            else:
                await admin.execute(statement)  # CREATE/DROP DATABASE: no prepared statements
        return rows
    finally:
        await admin.close()


def _postgres_url(name: str) -> str:
    base = POSTGRES_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}"


def _in_a_thread(work: Any) -> Any:
    # Session fixtures are synchronous; a thread of its own gives `work` an event loop without
    # touching the loop pytest-asyncio runs the tests in.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


async def _migrate(url: str) -> None:
    db = Database(url)
    try:
        await db.migrate()
    finally:
        await db.close()


# What a database at the newest schema holds before a test writes to it: its tables (with
# alembic_version's row). A database given back is emptied and must show this again.
_SHAPE = (
    "SELECT string_agg(tablename, ',' ORDER BY tablename) AS tables,"
    " (SELECT string_agg(version_num, ',') FROM alembic_version) AS revision"
    " FROM pg_tables WHERE schemaname = 'public'"
)


# Empties every table but alembic_version and restarts the identities. DELETE with foreign keys
# off (replica role: no triggers) is far cheaper than TRUNCATE, which writes new files for every
# table; without the superuser right to set the role it fails and the database is dropped.
_EMPTY_TABLES = """DO $$ DECLARE r record; BEGIN
  SET LOCAL session_replication_role = replica;
  FOR r IN SELECT tablename FROM pg_tables
      WHERE schemaname = 'public' AND tablename <> 'alembic_version' LOOP
    EXECUTE format('DELETE FROM %I', r.tablename);
  END LOOP;
  FOR r IN SELECT sequencename, start_value FROM pg_sequences WHERE schemaname = 'public' LOOP
    PERFORM setval(format('%I', r.sequencename)::regclass, r.start_value, false);
  END LOOP;
END $$"""


class MigratedDatabases:
    """Databases at the newest schema, migrated once per kind and test process.

    Running the eleven Alembic revisions for every test cost seconds per PostgreSQL test, and
    CREATE and DROP DATABASE a few more. SQLite tests get a copy of a migrated file. PostgreSQL
    tests get a database copied from a migrated template (`CREATE DATABASE … TEMPLATE`) that is
    emptied afterwards (rows deleted, identities restarted) and handed to the next test; one that
    doesn't come back to the template's shape is dropped. Tests about the migrations themselves
    ask for an empty database instead (`@pytest.mark.empty_database`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # One template per xdist worker: PostgreSQL copies a template only while nobody else is
        # connected to it, so workers must not share one. The pid keeps two runs on one server
        # (side-by-side checkouts) from dropping each other's templates.
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.prefix = f"palui_test_{_migrations_fingerprint()}_{worker}_{os.getpid()}"
        self._sqlite: Path | None = None
        self._template: str | None = None
        self._shape: Any = None
        self._free: list[str] = []
        self._created: list[str] = []

    def sqlite_file(self) -> Path:
        if self._sqlite is None:
            path = self.directory / "template.db"
            _in_a_thread(_migrate(f"sqlite+aiosqlite:///{path}"))
            self._sqlite = path
        return self._sqlite

    def _postgres_template(self) -> str:
        if self._template is None:
            name = f"{self.prefix}_template"
            _in_a_thread(
                _postgres_admin(
                    f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'
                )
            )
            self._created.append(name)
            _in_a_thread(_migrate(_postgres_url(name)))
            self._shape = tuple(_in_a_thread(_postgres_admin(_SHAPE, database=name))[0])
            self._template = name
        return self._template

    async def take_postgres(self) -> str:
        if self._free:
            return self._free.pop()
        template = self._postgres_template()
        name = f"{self.prefix}_{uuid.uuid4().hex[:8]}"
        await _postgres_admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        self._created.append(name)
        return name

    async def give_back_postgres(self, name: str) -> None:
        try:
            # A daemon killed with -9 may leave a connection (and its locks) behind for a moment.
            await _postgres_admin(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                f" WHERE datname = '{name}' AND pid <> pg_backend_pid()"
            )
            [shape] = await _postgres_admin(_EMPTY_TABLES, _SHAPE, database=name)
            reusable = tuple(shape) == self._shape
        except (asyncpg.PostgresError, OSError):
            reusable = False
        if reusable:
            self._free.append(name)
        else:
            await self.drop_postgres(name)

    async def drop_postgres(self, name: str) -> None:
        await _postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self._created:
            self._created.remove(name)

    def close(self) -> None:
        if self._created:
            _in_a_thread(
                _postgres_admin(
                    *(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' for name in self._created)
                )
            )


@pytest.fixture(scope="session")
def migrated_databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MigratedDatabases]:
    databases = MigratedDatabases(tmp_path_factory.mktemp("templates"))
    yield databases
    databases.close()


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, migrated_databases: MigratedDatabases
) -> AsyncIterator[str]:
    """A database of each kind for this test alone, at the newest schema and without rows;
    empty (no schema at all) for a test marked `empty_database`."""
    empty = request.node.get_closest_marker("empty_database") is not None
    if request.param == "sqlite":
        path = tmp_path / "palui.db"
        if not empty:
            shutil.copyfile(migrated_databases.sqlite_file(), path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    if not _postgres_available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not running on 127.0.0.1:5432")
        pytest.skip("PostgreSQL is not running on 127.0.0.1:5432")
    if empty:
        name = f"{migrated_databases.prefix}_empty_{uuid.uuid4().hex[:8]}"
        await _postgres_admin(f'CREATE DATABASE "{name}"')
        yield _postgres_url(name)
        await migrated_databases.drop_postgres(name)
        return
    name = await migrated_databases.take_postgres()
    yield _postgres_url(name)
    await migrated_databases.give_back_postgres(name)


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
    # Telegram's servers would have fetched these URLs before anyone saw the message.
    assert fake.previews_fetched == [], f"link previews fetched: {fake.previews_fetched}"


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


@pytest.fixture
def palui_seams() -> dict[str, Any]:
    """What `start_palui` hands `Palui(settings, ...)` beside the settings, as set by the
    fixtures a test asks for (`test_pace`, `mcp_in_process`): the composition root's seams."""
    return {}


# In-process Palui paces its sends a little faster than Telegram asks (one message per chat per
# second), so a test that exchanges many messages doesn't spend most of its time waiting. Order
# and every other rule are unchanged; the pacing itself is tested in
# tests/channels/test_ratelimit.py, and a test marked `production_pace` keeps Telegram's real
# limits.
TEST_PACE = {"per_chat_interval": 0.05, "group_per_minute": 600, "global_per_second": 300}


@pytest.fixture
def test_pace(request: pytest.FixtureRequest, palui_seams: dict[str, Any]) -> None:
    if request.node.get_closest_marker("production_pace"):
        return
    from palui.channels.ratelimit import SendLimits

    palui_seams["send_limits"] = SendLimits(**TEST_PACE)


@pytest.fixture
async def start_palui(
    settings_env: dict[str, str], test_pace: None, palui_seams: dict[str, Any]
) -> AsyncIterator[Any]:
    """Call `await start_palui()` (after adjusting env) to get a running Palui."""
    from palui.app.root import Palui
    from palui.config import load_settings

    running: list[tuple[Any, RunningPalui]] = []

    async def start(**overrides: str) -> RunningPalui:
        for key, value in overrides.items():
            os.environ[key] = value
        app = Palui(load_settings(), **palui_seams)
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


@pytest.fixture
def mcp_in_process(palui_seams: dict[str, Any]) -> Iterator[Any]:
    """The notes and bundled recall servers run in this process, through the connectors'
    transport seam, instead of as stdio subprocesses (tests/fakes/in_process_mcp.py). For
    tests about Palui's handling of those servers' tools rather than about stdio. `start_palui`
    uses it; a test building its own `Palui` passes it as `mcp_transport`."""
    from tests.fakes.in_process_mcp import InProcessServers

    servers = InProcessServers()
    palui_seams["mcp_transport"] = servers
    try:
        yield servers
    finally:
        servers.close()
