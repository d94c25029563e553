"""Nobody but Palui's own user reads its files: the data dir is 0700, every database file 0600
(palui.db and its -wal/-shm/-journal, the bundled recall's recall.db), whatever the umask."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from palui.cli.doctor import run_doctor
from palui.db import Database
from palui.db.files import tighten_sqlite
from palui.recall_server.store import MemoryStore
from tests.fakes.memory_channel import in_memory_settings, running_palui
from tests.toolkit import ScriptedModel


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The usual 022, which gives new files 0644 and new dirs 0755 unless told otherwise."""
    before = os.umask(0o022)
    yield
    os.umask(before)


async def test_a_fresh_start_creates_the_data_dir_0700_and_every_database_file_0600(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    settings = in_memory_settings(
        f"sqlite+aiosqlite:///{data / 'palui.db'}", str(data), recall={"enabled": True}
    )
    async with running_palui(settings, ScriptedModel([])) as (app, _chat):
        recall = app.connectors.get("recall")
        assert recall is not None
        await recall.wait_settled()
        assert recall.status().state == "connected", recall.status()
        assert mode(data) == 0o700
        files = sorted(p.name for p in data.iterdir())
        assert {"palui.db", "palui.db-wal", "palui.db-shm", "recall.db"} <= set(files), files
        assert {name: oct(mode(data / name)) for name in files} == {
            name: oct(0o600) for name in files
        }


async def test_an_existing_database_file_that_others_could_read_is_made_0600_on_migrate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "palui.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    await db.migrate()
    await db.close()
    path.chmod(0o644)
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        await db.migrate()
        assert mode(path) == 0o600
        # SQLite gives the sidecars it creates the database file's mode.
        assert mode(tmp_path / "palui.db-wal") == 0o600
        assert mode(tmp_path / "palui.db-shm") == 0o600
    finally:
        await db.close()


def test_a_sidecar_left_readable_is_tightened_with_its_database(tmp_path: Path) -> None:
    path = tmp_path / "palui.db"
    for name in ("palui.db", "palui.db-journal", "other.db"):
        (tmp_path / name).touch(mode=0o644)
    tighten_sqlite(path)
    assert mode(path) == 0o600
    assert mode(tmp_path / "palui.db-journal") == 0o600
    assert mode(tmp_path / "other.db") == 0o644


def test_the_recall_server_creates_its_file_0600_in_a_0700_dir(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "recall.db"
    store = MemoryStore(path)
    try:
        assert mode(path.parent) == 0o700
        for name in ("recall.db", "recall.db-wal", "recall.db-shm"):
            assert mode(path.parent / name) == 0o600, name
    finally:
        store.close()


async def test_doctor_names_the_chmod_that_closes_a_readable_data_dir_and_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "palui.db").touch(mode=0o644)
    (data / "recall.db").touch(mode=0o600)
    monkeypatch.setenv("PALUI_DATA_DIR", str(data))
    out = io.StringIO()
    assert await run_doctor(None, out) == 1
    text = out.getvalue()
    assert "❌ files: the data dir or a database file can be read by other users" in text
    assert f"fix: chmod 700 {data} && chmod 600 {data / 'palui.db'}\n" in text


async def test_doctor_is_content_with_private_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "palui.db").touch(mode=0o600)
    monkeypatch.setenv("PALUI_DATA_DIR", str(data))
    out = io.StringIO()
    await run_doctor(None, out)
    assert "✅ files: data dir 0700, database files 0600" in out.getvalue()
