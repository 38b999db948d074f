"""Saved chat sessions: one SQLite database in the state dir (the `SessionStore` of one
supervisor, and the default).

A turn is saved in one transaction once it is over, so a crash loses at most the turn that was
still running. SQLite blocks, so every statement runs in a worker thread, one at a time (the
connection is not safe to share between threads at once); the event loop never waits on disk.
WAL mode lets a reader (a `GET` of a session) proceed while a turn is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from actors.chat.sessionstore import (
    Relayed,
    ReplicaSeen,
    SavedSession,
    Serve,
    SessionPage,
    SessionSummary,
    StoreError,
    Waiting,
)
from actors.chat.turns import Message
from supervisor.model import jsonout

T = TypeVar("T")
logger = logging.getLogger("mcpapps.chat")

# Bump, and add a step to `_MIGRATIONS`, whenever the tables change.
SCHEMA_VERSION = 1
_MIGRATIONS: dict[int, str] = {
    1: """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            turns INTEGER NOT NULL
        );
        CREATE TABLE messages (
            session_id TEXT NOT NULL REFERENCES sessions (id),
            seq INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        );
    """,
}


__all__ = [
    "SCHEMA_VERSION",
    "ChatStore",
    "SavedSession",
    "SessionPage",
    "SessionSummary",
    "StoreError",
]


class ChatStore:
    """The SQLite `SessionStore`: one supervisor's, so nothing else writes it while it runs."""

    shared = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._one_at_a_time = trio.CapacityLimiter(1)
        self._seen: ReplicaSeen | None = None  # this supervisor: the only one

    @property
    def where(self) -> str:
        return str(self.path)

    @contextlib.asynccontextmanager
    async def hold_turn(self, session_id: str, waiting: Waiting) -> AsyncIterator[None]:
        # One process: its session actor already runs the session's turns one at a time.
        yield

    async def heartbeat(self, replica: ReplicaSeen) -> None:
        self._seen = attrs.evolve(replica, last_seen=time.time())

    async def replicas(self) -> list[ReplicaSeen]:
        if self._seen is None:
            return []
        return [attrs.evolve(self._seen, silent_s=time.time() - self._seen.last_seen)]

    async def serve_relayed(
        self, serve: Serve, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()  # no other supervisor: nothing is ever relayed

    async def relay(self, session_id: str, request: Relayed) -> Relayed | None:
        return None

    async def open(self) -> None:
        await self._in_thread(self._open)

    async def close(self) -> None:
        if self._connection is not None:
            await self._in_thread(self._connection.close)
            self._connection = None

    async def load(self, session_id: str) -> SavedSession:
        """The saved session, or an empty one if there is none yet."""
        return await self._in_thread(self._load, session_id)

    async def load_page(self, session_id: str, before: int | None, limit: int) -> SessionPage:
        """At most `limit` turns of the session, the last ones before turn `before` (all of
        its latest when None)."""
        return await self._in_thread(self._load_page, session_id, before, limit)

    async def list_sessions(self) -> tuple[SessionSummary, ...]:
        """Every saved session, the one with the latest turn first."""
        return await self._in_thread(self._list_sessions)

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions (all or none); returns how many there were."""
        return await self._in_thread(self._delete_sessions, tuple(session_ids))

    async def save_turn(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append one finished turn's messages (all or nothing)."""
        await self.save_turns(session_id, [messages])

    async def save_turns(self, session_id: str, turns: Sequence[Sequence[Message]]) -> None:
        """Append finished turns, each as its own turn, all in one transaction."""
        await self._in_thread(self._save_turns, session_id, [tuple(t) for t in turns])

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await trio.to_thread.run_sync(fn, *args, limiter=self._one_at_a_time)
        except StoreError:
            raise
        except (sqlite3.Error, OSError, ValueError) as error:
            # Whatever the disk or a damaged row does, it is this store's error, never the
            # supervisor's end: the caller says so and goes on.
            raise StoreError(f"the session database {self.path}: {error}") from error

    def _open(self) -> None:
        # Conversations and tool results are private, like the token beside them: only the
        # supervisor's user may read them (SQLite gives its -wal and -shm files the same mode).
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        # Also when they were made before, by an older mcpapps or by hand.
        _make_private(self.path.parent, 0o700)
        for suffix in ("", "-wal", "-shm"):
            if (file := self.path.with_name(self.path.name + suffix)).exists():
                _make_private(file, 0o600)
        connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            # With WAL, NORMAL loses no committed turn when the process dies; only a power
            # failure could lose the last ones.
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA foreign_keys=ON")
            self._migrate(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection

    def _migrate(self, connection: sqlite3.Connection) -> None:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the session database {self.path} has schema version {version}, newer than"
                f" this mcpapps understands ({SCHEMA_VERSION}): upgrade mcpapps, or move the"
                " file away to start with no saved sessions"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            with _transaction(connection):
                for statement in _statements(_MIGRATIONS[step]):
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {step}")

    def _load(self, session_id: str) -> SavedSession:
        db = self._db()
        row = db.execute(
            "SELECT turns, created_at, updated_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return SavedSession(session_id, (), 0)
        bodies = db.execute(
            "SELECT body FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        messages = tuple(json.loads(body) for (body,) in bodies)
        return SavedSession(session_id, messages, row[0], row[1], row[2])

    def _load_page(self, session_id: str, before: int | None, limit: int) -> SessionPage:
        db = self._db()
        row = db.execute("SELECT turns FROM sessions WHERE id = ?", (session_id,)).fetchone()
        turns = row[0] if row is not None else 0
        # Turns are numbered 1, 2, ... with no gap, so the page's bounds are known before
        # any message is read.
        last = turns if before is None else min(turns, before - 1)
        first = max(1, last - limit + 1)
        bodies = db.execute(
            "SELECT body FROM messages WHERE session_id = ? AND turn >= ? AND turn <= ?"
            " ORDER BY seq",
            (session_id, first, last),
        ).fetchall()
        messages = tuple(json.loads(body) for (body,) in bodies)
        return SessionPage(session_id, messages, turns, min(first, last + 1), max(last, 0))

    def _list_sessions(self) -> tuple[SessionSummary, ...]:
        rows = self._db().execute(
            "SELECT id, turns, created_at, updated_at FROM sessions ORDER BY updated_at DESC, id"
        )
        return tuple(SessionSummary(*row) for row in rows.fetchall())

    def _delete_sessions(self, session_ids: tuple[str, ...]) -> int:
        db = self._db()
        deleted = 0
        with _transaction(db):
            for session_id in session_ids:
                db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                deleted += db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
        return deleted

    def _save_turns(self, session_id: str, turns: list[tuple[Message, ...]]) -> None:
        db = self._db()
        with _transaction(db):
            for messages in turns:
                self._append(db, session_id, messages)

    @staticmethod
    def _append(db: sqlite3.Connection, session_id: str, messages: tuple[Message, ...]) -> None:
        now = time.time()
        db.execute(
            "INSERT INTO sessions (id, created_at, updated_at, turns) VALUES (?, ?, ?, 1)"
            " ON CONFLICT (id) DO UPDATE SET updated_at = ?, turns = turns + 1",
            (session_id, now, now, now),
        )
        (turn,) = db.execute("SELECT turns FROM sessions WHERE id = ?", (session_id,)).fetchone()
        (start,) = db.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()
        db.executemany(
            "INSERT INTO messages (session_id, seq, turn, body) VALUES (?, ?, ?, ?)",
            [
                # ASCII JSON: a lone surrogate from a client or a model is kept as its
                # escape, where SQLite's UTF-8 could not hold it.
                (session_id, start + i, turn, jsonout.dumps(message))
                for i, message in enumerate(messages, 1)
            ],
        )

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            raise StoreError(f"the session database {self.path} is not open")
        return self._connection


def _make_private(path: Path, mode: int) -> None:
    if path.stat().st_mode & 0o077 == 0:
        return
    try:
        path.chmod(mode)
    except PermissionError:
        logger.warning("%s can be read by other users, and its mode cannot be changed", path)


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """All or nothing; a failed COMMIT is rolled back too, or the connection would stay in the
    transaction and refuse every later one."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    return [statement.strip() for statement in script.split(";") if statement.strip()]
