"""The recall database: one SQLite file in WAL mode, created on first open.

Tables:
- `memories`: the rows. `source_id` is UNIQUE (NULLs allowed, and never equal to each other), so
  a save that names its source is stored at most once, whichever process or task gets there first.
  `tags` is a JSON list of strings; `kind` is 'profile' for facts about the person (a memory
  tagged 'profile': name, preferences, people around them) and 'fact' for everything else.
  `origin` is NULL for what the person said; else the untrusted source the memory's content may
  come from (a turn that read "mcp-web:mcp-web__fetch" saved it), set by the host in the call's
  `_meta`, never by the model: results showing such a memory report it, so the host taints the
  turn that reads it.
- `memory_tags`: one row per (tag, memory), so a tag filter is an index lookup, not a JSON scan;
  filled by a trigger from `tags`, emptied by ON DELETE CASCADE.
- `memories_fts`: an FTS5 index over `memories` (external content, kept in step by triggers).
  Ranked by bm25 with weights content 1.0, tags 0.5, kind 0 (`kind` is only there to filter on).

`PRAGMA user_version` holds SCHEMA_VERSION. A later change to the schema bumps it and adds a step
to `_upgrade` that takes a file of the previous version to the new one in one transaction.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 5000

_SCHEMA_V1 = """
CREATE TABLE memories (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    source_id TEXT UNIQUE,
    tags TEXT NOT NULL DEFAULT '[]',
    kind TEXT NOT NULL DEFAULT 'fact' CHECK (kind IN ('fact', 'profile')),
    created_at TEXT NOT NULL
);
CREATE INDEX memories_kind ON memories (kind, id);

CREATE TABLE memory_tags (
    tag TEXT NOT NULL,
    memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, memory_id)
) WITHOUT ROWID;
CREATE INDEX memory_tags_memory ON memory_tags (memory_id);

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, tags, kind,
    content = 'memories', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5, 0.0)');

CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, tags, kind)
    VALUES (new.id, new.content, new.tags, new.kind);
END;
CREATE TRIGGER memories_tags_ai AFTER INSERT ON memories BEGIN
    INSERT OR IGNORE INTO memory_tags (tag, memory_id)
    SELECT value, new.id FROM json_each(new.tags);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, tags, kind)
    VALUES ('delete', old.id, old.content, old.tags, old.kind);
END;
"""

# Version 2: where a memory came from (NULL: the person).
_SCHEMA_V2 = """
ALTER TABLE memories ADD COLUMN origin TEXT;
"""
_STEPS = {1: _SCHEMA_V1, 2: _SCHEMA_V2}  # the script that takes version n-1 to version n


class SchemaTooNew(RuntimeError):
    """The file was written by a newer recall server than this one."""


def open_database(path: Path | str) -> sqlite3.Connection:
    """Open (creating if needed) the recall database, ready for use from any one thread at a time.

    The connection is in autocommit mode (`isolation_level=None`); callers open transactions
    explicitly with BEGIN IMMEDIATE, so two writers never deadlock on a lock upgrade.
    """
    if str(path) != ":memory:":
        # Private, as palui.db is (palui.db.files; this server imports nothing of Palui):
        # the dir 0700, the file 0600 before SQLite opens it (its -wal and -shm follow it).
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable except on power loss
    conn.execute("PRAGMA foreign_keys = ON")
    try:
        _upgrade(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _upgrade(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")  # two processes opening a new file: one creates, one waits
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"recall database is schema version {version}; this server knows up to "
                f"{SCHEMA_VERSION}: upgrade Palui"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _statements(_STEPS[step]):
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a script into statements (executescript would commit our open transaction)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return statements
