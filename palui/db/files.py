"""Who may read Palui's files: the data dir is 0700 and every database file 0600 (DESIGN §1.11).

The database holds the conversations, the approvals and whatever tools returned, so nobody but
Palui's own user should read it. The data dir is created 0700; a SQLite file is created 0600
before SQLite opens it, and SQLite then gives its -wal, -shm and -journal files the same mode.
A database file found looser is tightened when Palui migrates it (`palui run`, `palui chat`,
`palui migrate`); a looser data dir is left to the operator (it may be a mounted or shared
directory), and `palui doctor` says how to fix it. The bundled recall server creates its own
file the same way (it stands alone, so it repeats the two lines that do it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import make_url

from palui.logs import get_logger

log = get_logger("palui.db.files")

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite database URL; None for PostgreSQL and in-memory SQLite."""
    parsed = make_url(url)
    name = parsed.database
    if parsed.get_backend_name() != "sqlite" or not name or name.startswith((":", "file:")):
        return None
    return Path(name)


def private_dir(path: Path) -> None:
    """Create the directory (and its parents) with mode 0700 for the last one; an existing one
    keeps its mode."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)


def create_private_file(path: Path) -> None:
    """Create an empty file with mode 0600 unless it exists (an empty file is an empty SQLite
    database, so SQLite opens it as it would have created it, only not world-readable)."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE)
    os.close(fd)


def sqlite_files(database: Path) -> Iterator[Path]:
    """The database file and those of its sidecars that exist now."""
    for path in (database, *(Path(f"{database}{suffix}") for suffix in SQLITE_SIDECARS)):
        if path.exists():
            yield path


def too_open(path: Path, allowed: int) -> bool:
    """Whether group or others may do more with `path` than `allowed` lets them."""
    return bool(stat.S_IMODE(path.stat().st_mode) & ~allowed & 0o077)


def tighten_sqlite(database: Path) -> None:
    """Make the database file and its sidecars 0600 where they are looser."""
    for path in sqlite_files(database):
        if too_open(path, PRIVATE_FILE):
            mode = stat.S_IMODE(path.stat().st_mode)
            path.chmod(PRIVATE_FILE)
            log.warning("database_file_tightened", path=str(path), was=oct(mode))


def loose_files(data_dir: Path, databases: list[Path]) -> list[str]:
    """The chmod commands that would close what is looser than 0700 / 0600 (for doctor)."""
    fixes = []
    if data_dir.is_dir() and too_open(data_dir, PRIVATE_DIR):
        fixes.append(f"chmod 700 {data_dir}")
    loose = [str(p) for db in databases for p in sqlite_files(db) if too_open(p, PRIVATE_FILE)]
    if loose:
        fixes.append(f"chmod 600 {' '.join(loose)}")
    return fixes
