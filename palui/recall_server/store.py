"""MemoryStore: the recall database as plain, blocking methods (run them off the event loop).

One connection, guarded by a lock, so the store may be called from any worker thread. Writes run
in BEGIN IMMEDIATE transactions, which also serialise them against other processes on the file.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from palui.recall_server import query as fts
from palui.recall_server.schema import open_database

MAX_CONTENT_CHARS = 32_000
MAX_SOURCE_ID_CHARS = 200
MAX_ORIGIN_CHARS = 200
MAX_TAGS = 20
MAX_TAG_CHARS = 50
MAX_LIMIT = 100
CANDIDATES = 1000  # the most matches one FTS query ranks (see _SEARCH)
OPTIMIZE_AFTER = 1000  # add_many merges the FTS index after adding this many
PROFILE_TAG = "profile"


class InvalidInput(ValueError):
    """The caller's input can't be used; the message says what to change."""


class MemoryKind(StrEnum):
    FACT = "fact"
    PROFILE = "profile"  # a fact about the person: any memory tagged 'profile'


@dataclass(frozen=True, slots=True)
class Memory:
    id: int
    content: str
    source_id: str | None
    tags: tuple[str, ...]
    kind: MemoryKind
    created_at: str  # ISO 8601, UTC
    origin: str | None = None  # the untrusted source its content may come from; None: the person

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "source_id": self.source_id,
            "tags": list(self.tags),
            "kind": str(self.kind),
            "created_at": self.created_at,
            "origin": self.origin,
        }


@dataclass(frozen=True, slots=True)
class NewMemory:
    content: str
    source_id: str | None = None
    tags: tuple[str, ...] = ()
    origin: str | None = None


def utc_now() -> datetime:
    return datetime.now(UTC)


class MemoryStore:
    def __init__(self, path: Path | str, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._conn = open_database(path)
        self._lock = threading.Lock()
        self._clock = clock

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------

    def add(
        self,
        content: str,
        source_id: str | None = None,
        tags: Iterable[str] = (),
        origin: str | None = None,
    ) -> tuple[Memory, bool]:
        """Save a memory; returns it and whether it is new. A known source_id is a no-op that
        returns the memory already saved under it (its content and origin are not replaced)."""
        row = self._row(NewMemory(content, source_id, tuple(tags), origin))
        with self._write() as conn:
            if row["source_id"] is not None:
                existing = conn.execute(
                    "SELECT * FROM memories WHERE source_id = ?", (row["source_id"],)
                ).fetchone()
                if existing is not None:
                    return _memory(existing), False
            inserted = conn.execute(_INSERT + " RETURNING *", row).fetchone()
            return _memory(inserted), True

    def add_many(self, memories: Iterable[NewMemory]) -> int:
        """Save many memories in one transaction (known source ids are skipped); returns how
        many were added."""
        rows = [self._row(memory) for memory in memories]
        with self._write() as conn:
            before = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            conn.executemany(_INSERT, rows)
            added = int(conn.execute("SELECT count(*) FROM memories").fetchone()[0] - before)
            if added >= OPTIMIZE_AFTER:
                # A bulk load leaves the index in many segments; one merge makes every later
                # query read one (about 0.3 s for 100,000 memories, queries ~30% faster).
                conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
            return added

    def forget(self, memory_id: int) -> Memory | None:
        """Delete a memory; returns what was deleted, or None when there was no such memory."""
        with self._write() as conn:
            row = conn.execute(
                "DELETE FROM memories WHERE id = ? RETURNING *", (memory_id,)
            ).fetchone()
            return None if row is None else _memory(row)

    # -- reading ----------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory | None:
        with self._lock:
            row = self._conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else _memory(row)

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def search(self, text: str, limit: int = 10) -> list[Memory]:
        """Memories holding all the words of `text` first, then those holding some, by bm25."""
        words = fts.terms(text)
        if not words:
            raise InvalidInput("the query has no words to search for")
        return self._ranked(words, _check_limit(limit))

    def ask(self, question: str, limit: int = 5) -> list[Memory]:
        """The memories that best match the question's keywords (stop words left out)."""
        words = fts.keywords(question)
        if not words:
            raise InvalidInput("the question has no words to look for")
        return self._ranked(words, _check_limit(limit))

    def profile(self, text: str | None = None, limit: int = 10) -> list[Memory]:
        """What is known about the person. Without text: the newest profile memories. With text:
        profile memories that match it, then other memories that match it, then the remaining
        profile memories, newest first."""
        limit = _check_limit(limit)
        words = fts.keywords(text) if text else []
        found: dict[int, Memory] = {}
        if words:
            for profile_only in (True, False):
                for memory in self._ranked(words, limit, profile_only=profile_only):
                    if len(found) < limit:
                        found.setdefault(memory.id, memory)
        if len(found) < limit:
            with self._lock:
                rows = self._conn.execute(
                    "SELECT * FROM memories WHERE kind = ? ORDER BY id DESC LIMIT ?",
                    (MemoryKind.PROFILE, limit),
                ).fetchall()
            for row in rows:
                if len(found) == limit:
                    break
                found.setdefault(row["id"], _memory(row))
        return list(found.values())

    def page(
        self, limit: int = 20, offset: int = 0, tag: str | None = None
    ) -> tuple[list[Memory], int]:
        """A page of memories, newest first, and how many there are in all (with that tag)."""
        limit = _check_limit(limit)
        if offset < 0:
            raise InvalidInput("offset must be 0 or more")
        with self._lock:
            if tag is None:
                total = self._conn.execute("SELECT count(*) FROM memories").fetchone()[0]
                rows = self._conn.execute(
                    "SELECT * FROM memories ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)
                ).fetchall()
            else:
                tag = _clean_tag(tag)
                total = self._conn.execute(
                    "SELECT count(*) FROM memory_tags WHERE tag = ?", (tag,)
                ).fetchone()[0]
                rows = self._conn.execute(
                    "SELECT m.* FROM memory_tags t JOIN memories m ON m.id = t.memory_id"
                    " WHERE t.tag = ? ORDER BY t.memory_id DESC LIMIT ? OFFSET ?",
                    (tag, limit, offset),
                ).fetchall()
        return [_memory(row) for row in rows], int(total)

    # -- inside -----------------------------------------------------------------------------

    def _ranked(self, words: list[str], limit: int, *, profile_only: bool = False) -> list[Memory]:
        """Rows holding every word, then (when short of `limit`) rows holding any word that is
        not common, best bm25 rank first."""
        found: dict[int, Memory] = {}
        with self._lock:
            for expression in self._expressions(words):
                if profile_only:
                    # Filtering in FTS5 keeps the LIMIT inside the ranked query. bm25 reads the
                    # whole doclist of every phrase, so filter only on the rare kind, never on
                    # 'fact'.
                    expression = f'({expression}) AND kind : "{MemoryKind.PROFILE}"'
                for row in self._conn.execute(_SEARCH, (expression, CANDIDATES, limit)):
                    found.setdefault(row["id"], _memory(row))
                if len(found) >= limit:
                    break
        return list(found.values())[:limit]

    def _expressions(self, words: list[str]) -> Iterator[str]:
        yield fts.match_all(words)
        if len(words) > 1:
            # A word in more than CANDIDATES memories would flood an OR query with rows that
            # only share it; it still counted in the AND query above.
            rare = [word for word in words if self._document_count(word) <= CANDIDATES]
            yield fts.match_any(rare or words)

    def _document_count(self, word: str) -> int:
        """How many memories hold the word, counted up to CANDIDATES + 1 (so it stays cheap)."""
        row = self._conn.execute(_COUNT, (fts.match_all([word]), CANDIDATES + 1)).fetchone()
        return int(row[0])

    def _row(self, memory: NewMemory) -> dict[str, Any]:
        content = memory.content.strip() if isinstance(memory.content, str) else ""
        if not content:
            raise InvalidInput("content is empty: give the text to remember")
        if len(content) > MAX_CONTENT_CHARS:
            raise InvalidInput(f"content is too long: at most {MAX_CONTENT_CHARS} characters")
        source_id = memory.source_id
        if source_id is not None:
            source_id = source_id.strip()
            if not source_id or len(source_id) > MAX_SOURCE_ID_CHARS:
                raise InvalidInput(f"source_id must be 1 to {MAX_SOURCE_ID_CHARS} characters")
        tags = list(dict.fromkeys(_clean_tag(tag) for tag in memory.tags))
        if len(tags) > MAX_TAGS:
            raise InvalidInput(f"too many tags: at most {MAX_TAGS}")
        kind = MemoryKind.PROFILE if PROFILE_TAG in tags else MemoryKind.FACT
        origin = memory.origin.strip() if isinstance(memory.origin, str) else None
        if origin is not None and len(origin) > MAX_ORIGIN_CHARS:
            raise InvalidInput(f"origin must be at most {MAX_ORIGIN_CHARS} characters")
        return {
            "content": content,
            "source_id": source_id,
            "tags": json.dumps(tags, ensure_ascii=False),
            "kind": str(kind),
            "created_at": self._clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "origin": origin or None,
        }

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


_INSERT = (
    "INSERT INTO memories (content, source_id, tags, kind, created_at, origin)"
    " VALUES (:content, :source_id, :tags, :kind, :created_at, :origin)"
    " ON CONFLICT (source_id) DO NOTHING"
)
# bm25 costs time for every row it scores, so a query scores at most the newest CANDIDATES of
# its matches: that bounds a search at any size, and only a query matching more memories than
# that (which the AND-then-rare-words order above makes rare) leaves older ones unranked.
_SEARCH = (
    "SELECT m.* FROM ("
    "  SELECT rowid, rank FROM memories_fts WHERE memories_fts MATCH ?"
    "  ORDER BY rowid DESC LIMIT ?"
    ") AS f JOIN memories m ON m.id = f.rowid ORDER BY f.rank LIMIT ?"
)
_COUNT = "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"


def _memory(row: sqlite3.Row) -> Memory:
    return Memory(
        id=row["id"],
        content=row["content"],
        source_id=row["source_id"],
        tags=tuple(json.loads(row["tags"])),
        kind=MemoryKind(row["kind"]),
        created_at=row["created_at"],
        origin=row["origin"],
    )


def _clean_tag(tag: str) -> str:
    cleaned = tag.strip().lower() if isinstance(tag, str) else ""
    if not cleaned or len(cleaned) > MAX_TAG_CHARS:
        raise InvalidInput(f"each tag must be 1 to {MAX_TAG_CHARS} characters")
    return cleaned


def _check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    return limit
