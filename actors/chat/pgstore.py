"""Saved chat sessions in PostgreSQL: the `SessionStore` several supervisors share.

psycopg 3 is a blocking driver here, as sqlite3 is for the SQLite store: every call runs in a
worker thread (`trio.to_thread.run_sync`), with connections from psycopg's pool, so the event
loop never waits on the network. (psycopg's async API is asyncio's; a Trio process would need
an asyncio bridge for it.)

A session's turns run one at a time across every supervisor: a turn holds a PostgreSQL advisory
lock keyed by the session, on a connection of its own for as long as the turn runs. If the
supervisor holding it dies, its connection closes and the database frees the lock; no lease to
expire, no row to clean up. Who holds it is read from `pg_locks` (each connection is named
after its supervisor, `application_name`).

What reaches a turn wherever it runs (cancel, the person's answer to an app's question) is
relayed with LISTEN/NOTIFY: one channel, each message addressed to one supervisor, answered on
the same channel. A supervisor's listener is one more connection, read in a worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool
import trio

from actors.chat.sessionstore import (
    Relayed,
    RelayFailed,
    ReplicaSeen,
    SavedSession,
    Serve,
    SessionPage,
    SessionSummary,
    StoreError,
    TurnWaitTimeout,
    Waiting,
)
from actors.chat.turns import Message
from supervisor.model import jsonout

T = TypeVar("T")
logger = logging.getLogger("mcpapps.chat")

# Bump, and add a step to `_MIGRATIONS`, whenever the tables change. Each step runs once, in
# one transaction, under a lock: supervisors starting together migrate once.
SCHEMA_VERSION = 2
_MIGRATIONS: dict[int, Sequence[str]] = {
    1: (
        """CREATE TABLE mcpapps_sessions (
            id TEXT PRIMARY KEY,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            turns INTEGER NOT NULL
        )""",
        """CREATE TABLE mcpapps_messages (
            session_id TEXT NOT NULL REFERENCES mcpapps_sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
    ),
    2: (
        """CREATE TABLE mcpapps_replicas (
            id TEXT PRIMARY KEY,
            url TEXT NOT NULL,
            version TEXT NOT NULL,
            started DOUBLE PRECISION NOT NULL,
            last_seen DOUBLE PRECISION NOT NULL,
            apps TEXT NOT NULL
        )""",
    ),
}
FORGET_AFTER_S = 24 * 3600.0  # a replica silent this long leaves the cluster view
# The advisory lock keys are two int4s: this namespace ("mcpa"), then the session's hash or 0
# for the migrations.
_NAMESPACE = 0x6D637061
_MIGRATION_KEY = 0
_UNLOCK = "SELECT pg_advisory_unlock(%s, %s)"
CHANNEL = "mcpapps_relay"
RELAY_TIMEOUT_S = 10.0  # a relayed request's answer; the other side answers from memory
LISTEN_RETRY_S = 1.0  # the listener's connection lost: try again after this
POLL_S = 0.1  # how often a waiting turn tries the lock again
POOL_MAX = 8  # connections for statements; a turn's lock takes one more, of its own
TURNS_MAX = 100  # turns this supervisor runs at once before one waits for a lock connection


def redacted(url: str) -> str:
    """The URL with its password (if any) replaced, fit for the log and for errors."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
    except ValueError:
        return "a PostgreSQL URL that cannot be parsed"


def lock_key(session_id: str) -> int:
    """The session's half of its advisory lock key: a non-negative int4 (two sessions that
    share one only wait for each other's turns)."""
    return int.from_bytes(hashlib.sha256(session_id.encode()).digest()[:4]) & 0x7FFFFFFF


class PostgresStore:
    shared = True

    def __init__(
        self, url: str, *, replica: str, turn_wait_s: float, connect_wait_s: float = 30.0
    ) -> None:
        self._url = url
        self.replica = replica
        self.turn_wait_s = turn_wait_s
        self.connect_wait_s = connect_wait_s
        self._pool: psycopg_pool.ConnectionPool | None = None
        self._locks: psycopg_pool.ConnectionPool | None = None
        self._answers: dict[str, trio.MemorySendChannel[Relayed]] = {}  # relayed, by id

    @property
    def where(self) -> str:
        return redacted(self._url)

    async def open(self) -> None:
        await self._in_thread(self._open)

    async def close(self) -> None:
        pools, self._pool, self._locks = (self._pool, self._locks), None, None
        for pool in pools:
            if pool is not None:
                await trio.to_thread.run_sync(pool.close)

    async def load(self, session_id: str) -> SavedSession:
        return await self._in_thread(self._load, session_id)

    async def load_page(self, session_id: str, before: int | None, limit: int) -> SessionPage:
        return await self._in_thread(self._load_page, session_id, before, limit)

    async def list_sessions(self) -> tuple[SessionSummary, ...]:
        return await self._in_thread(self._list_sessions)

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        return await self._in_thread(self._delete_sessions, list(session_ids))

    async def save_turn(self, session_id: str, messages: Sequence[Message]) -> None:
        await self.save_turns(session_id, [messages])

    async def save_turns(self, session_id: str, turns: Sequence[Sequence[Message]]) -> None:
        await self._in_thread(self._save_turns, session_id, [tuple(t) for t in turns])

    @contextlib.asynccontextmanager
    async def hold_turn(self, session_id: str, waiting: Waiting) -> AsyncIterator[None]:
        locks = self._opened(self._locks)
        key = lock_key(session_id)
        connection = await self._in_thread(locks.getconn)
        try:
            await self._take_lock(connection, session_id, key, waiting)
            try:
                yield
            finally:
                with trio.CancelScope(shield=True):
                    await self._in_thread(
                        _run, connection, "SELECT pg_advisory_unlock(%s, %s)", key
                    )
        finally:
            # A connection that failed goes back closed: the pool makes a new one.
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(locks.putconn, connection)

    async def holder(self, session_id: str) -> str | None:
        """The supervisor running a turn of this session now, if any."""
        return await self._in_thread(self._holder, lock_key(session_id))

    async def heartbeat(self, replica: ReplicaSeen) -> None:
        await self._in_thread(self._heartbeat, replica)

    async def replicas(self) -> list[ReplicaSeen]:
        return await self._in_thread(self._replicas)

    def _heartbeat(self, replica: ReplicaSeen) -> None:
        apps = json.dumps([list(app) for app in replica.apps])
        # The database's clock, not each host's: replicas on several machines compare alike.
        with self._opened(self._pool).connection() as connection, connection.transaction():
            connection.execute(
                "INSERT INTO mcpapps_replicas (id, url, version, started, last_seen, apps)"
                " VALUES (%s, %s, %s, %s, EXTRACT(EPOCH FROM now()), %s)"
                " ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, version = EXCLUDED.version,"
                " started = EXCLUDED.started, last_seen = EXCLUDED.last_seen, apps = EXCLUDED.apps",
                (replica.id, replica.url, replica.version, replica.started, apps),
            )
            connection.execute(
                "DELETE FROM mcpapps_replicas WHERE last_seen < EXTRACT(EPOCH FROM now()) - %s",
                (FORGET_AFTER_S,),
            )

    def _replicas(self) -> list[ReplicaSeen]:
        with self._opened(self._pool).connection() as connection:
            rows = connection.execute(
                "SELECT id, url, version, started, apps, last_seen,"
                " EXTRACT(EPOCH FROM now())::float8 - last_seen FROM mcpapps_replicas ORDER BY id"
            ).fetchall()
        return [
            ReplicaSeen(
                id, url, version, started, tuple((a, s) for a, s in json.loads(apps)), seen, silent
            )
            for id, url, version, started, apps, seen, silent in rows
        ]

    async def relay(self, session_id: str, request: Relayed) -> Relayed | None:
        holder = await self.holder(session_id)
        if holder is None or holder == self.replica:
            return None
        request_id = uuid.uuid4().hex
        send, receive = trio.open_memory_channel[Relayed](1)
        self._answers[request_id] = send
        try:
            message = {**request, "to": holder, "from": self.replica, "id": request_id}
            await self._in_thread(self._notify, message | {"session": session_id})
            with trio.move_on_after(RELAY_TIMEOUT_S):
                return await receive.receive()
        finally:
            del self._answers[request_id]
        raise RelayFailed(
            f"the turn of session '{session_id}' runs on {holder}, which did not answer within"
            f" {RELAY_TIMEOUT_S:g} s: send it to that supervisor"
        )

    async def serve_relayed(
        self, serve: Serve, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        arrived, incoming = trio.open_memory_channel[Relayed](math.inf)
        listening = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._listen, arrived, listening)
            with trio.move_on_after(RELAY_TIMEOUT_S):
                await listening.wait()  # else it is logged, and tried again meanwhile
            task_status.started()
            async for message in incoming:
                if message.get("to") != self.replica:
                    continue
                if message.get("kind") == "answer":
                    if (waiter := self._answers.get(str(message.get("id")))) is not None:
                        with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                            waiter.send_nowait(message.get("result") or {})
                else:
                    nursery.start_soon(self._answer, serve, message)

    async def _answer(self, serve: Serve, message: Relayed) -> None:
        try:
            result = await serve(message)
            answer = {"kind": "answer", "to": message.get("from"), "id": message.get("id")}
            await self._in_thread(self._notify, answer | {"result": dict(result)})
        except Exception as error:  # one relayed request's failure, never the listener's end
            # Unanswered, the other supervisor tells its client so (RelayFailed) in time.
            logger.warning(
                "a request relayed by %s was not answered: %r", message.get("from"), error
            )

    async def _listen(
        self, arrived: trio.MemorySendChannel[Relayed], listening: trio.Event
    ) -> None:
        """LISTEN on a connection of its own, read in a worker thread; what arrives is passed
        to the Trio side. Lost, it is made again."""
        token = trio.lowlevel.current_trio_token()

        def listen(stop: threading.Event) -> None:
            with psycopg.connect(self._url, autocommit=True, **self._settings()) as connection:
                connection.execute(f"LISTEN {CHANNEL}")
                trio.from_thread.run_sync(listening.set, trio_token=token)
                while not stop.is_set():
                    for note in connection.notifies(timeout=0.5, stop_after=100):
                        message = None
                        with contextlib.suppress(ValueError):
                            message = json.loads(note.payload)
                        if isinstance(message, dict):  # ours are objects; others are dropped
                            trio.from_thread.run_sync(
                                arrived.send_nowait, message, trio_token=token
                            )

        def listen_until_stopped(stop: threading.Event) -> None:
            with contextlib.suppress(trio.RunFinishedError):  # the process is ending
                listen(stop)

        while True:
            stop = threading.Event()
            try:
                # Abandoned when cancelled: the thread sees `stop` within half a second and
                # closes its connection itself.
                await trio.to_thread.run_sync(listen_until_stopped, stop, abandon_on_cancel=True)
            except (psycopg.Error, OSError) as error:
                logger.warning(
                    "requests relayed by other supervisors cannot be received: %s; trying again",
                    error,
                )
            finally:
                stop.set()
            await trio.sleep(LISTEN_RETRY_S)

    def _notify(self, message: Relayed) -> None:
        with self._opened(self._pool).connection() as connection:
            connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, jsonout.dumps(message)))

    def _settings(self) -> dict[str, Any]:
        # Who holds a turn's lock is read back from this name (PostgreSQL keeps 63 bytes).
        return {"application_name": f"mcpapps {self.replica}"[:63]}

    async def _take_lock(
        self, connection: psycopg.Connection, session_id: str, key: int, waiting: Waiting
    ) -> None:
        deadline = trio.current_time() + self.turn_wait_s
        holder: str | None = None
        while not await self._in_thread(
            _run, connection, "SELECT pg_try_advisory_lock(%s, %s)", key
        ):
            if holder is None:
                holder = await self._in_thread(self._holder, key) or "another supervisor"
                waiting(holder)
            if trio.current_time() >= deadline:
                raise TurnWaitTimeout(
                    f"a turn of session '{session_id}' has been running on {holder} for more"
                    f" than {self.turn_wait_s:g} s ([state] turn_wait_s): send this message"
                    " again once that turn is over, or cancel it"
                )
            await trio.sleep(POLL_S)

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return await trio.to_thread.run_sync(fn, *args)
        except StoreError:
            raise
        except (psycopg.Error, psycopg_pool.PoolTimeout, OSError, ValueError) as error:
            # Whatever the network or the server does, it is this store's error, never the
            # supervisor's end: the caller says so and goes on.
            raise StoreError(self._scrub(f"the session database {self.where}: {error}")) from None

    def _scrub(self, text: str) -> str:
        """`text` without the password, should the driver have quoted the URL."""
        with contextlib.suppress(ValueError):
            if password := urlsplit(self._url).password:
                return text.replace(password, "***")
        return text

    def _open(self) -> None:
        settings = {"autocommit": True, **self._settings()}

        def pool(min_size: int, max_size: int) -> psycopg_pool.ConnectionPool:
            return psycopg_pool.ConnectionPool(
                self._url,
                kwargs=settings,
                min_size=min_size,
                max_size=max_size,
                open=False,
                name=f"mcpapps-{min_size}",
                timeout=30.0,
                check=psycopg_pool.ConnectionPool.check_connection,
            )

        statements = pool(1, POOL_MAX)
        try:
            statements.open(wait=True, timeout=self.connect_wait_s)
            with statements.connection() as connection:
                self._migrate(connection)
        except BaseException:
            statements.close()
            raise
        # One connection per running turn, made when a turn asks (the turns are bounded by
        # the sessions this supervisor runs at once).
        locks = pool(0, TURNS_MAX)
        locks.open()
        self._pool, self._locks = statements, locks

    def _migrate(self, connection: psycopg.Connection) -> None:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_NAMESPACE, _MIGRATION_KEY))
            connection.execute("CREATE TABLE IF NOT EXISTS mcpapps_schema (version INTEGER)")
            row = connection.execute("SELECT version FROM mcpapps_schema").fetchone()
            version = 0 if row is None else row[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the session database {self.where} has schema version {version}, newer"
                    f" than this mcpapps understands ({SCHEMA_VERSION}): upgrade mcpapps on"
                    " every supervisor that shares it"
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[step]:
                    connection.execute(statement)
            if row is None:
                connection.execute(
                    "INSERT INTO mcpapps_schema (version) VALUES (%s)", (SCHEMA_VERSION,)
                )
            elif version < SCHEMA_VERSION:
                connection.execute("UPDATE mcpapps_schema SET version = %s", (SCHEMA_VERSION,))
        if version < SCHEMA_VERSION:
            logger.info(
                "session database %s: schema version %s → %s", self.where, version, SCHEMA_VERSION
            )

    def _load(self, session_id: str) -> SavedSession:
        with self._opened(self._pool).connection() as connection:
            row = connection.execute(
                "SELECT turns, created_at, updated_at FROM mcpapps_sessions WHERE id = %s",
                (session_id,),
            ).fetchone()
            if row is None:
                return SavedSession(session_id, (), 0)
            bodies = connection.execute(
                "SELECT body FROM mcpapps_messages WHERE session_id = %s ORDER BY seq",
                (session_id,),
            ).fetchall()
        messages = tuple(json.loads(body) for (body,) in bodies)
        return SavedSession(session_id, messages, row[0], row[1], row[2])

    def _load_page(self, session_id: str, before: int | None, limit: int) -> SessionPage:
        with self._opened(self._pool).connection() as connection, connection.transaction():
            # One transaction: the count and the page agree even while another saves a turn.
            row = connection.execute(
                "SELECT turns FROM mcpapps_sessions WHERE id = %s", (session_id,)
            ).fetchone()
            turns = row[0] if row is not None else 0
            # Turns are numbered 1, 2, ... with no gap: the page's bounds are known first.
            last = turns if before is None else min(turns, before - 1)
            first = max(1, last - limit + 1)
            bodies = connection.execute(
                "SELECT body FROM mcpapps_messages WHERE session_id = %s AND turn >= %s"
                " AND turn <= %s ORDER BY seq",
                (session_id, first, last),
            ).fetchall()
        messages = tuple(json.loads(body) for (body,) in bodies)
        return SessionPage(session_id, messages, turns, min(first, last + 1), max(last, 0))

    def _list_sessions(self) -> tuple[SessionSummary, ...]:
        with self._opened(self._pool).connection() as connection:
            rows = connection.execute(
                "SELECT id, turns, created_at, updated_at FROM mcpapps_sessions"
                " ORDER BY updated_at DESC, id"
            ).fetchall()
        return tuple(SessionSummary(*row) for row in rows)

    def _delete_sessions(self, session_ids: list[str]) -> int:
        with self._opened(self._pool).connection() as connection, connection.transaction():
            # Messages go with their session (ON DELETE CASCADE).
            cursor = connection.execute(
                "DELETE FROM mcpapps_sessions WHERE id = ANY(%s)", (session_ids,)
            )
            return cursor.rowcount

    def _save_turns(self, session_id: str, turns: list[tuple[Message, ...]]) -> None:
        with self._opened(self._pool).connection() as connection, connection.transaction():
            for messages in turns:
                _append(connection, session_id, messages)

    def _holder(self, key: int) -> str | None:
        with self._opened(self._pool).connection() as connection:
            row = connection.execute(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
                " AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid",
                (_NAMESPACE, key),
            ).fetchone()
        if row is None:
            return None
        name: str = row[0]
        return name.removeprefix("mcpapps ")

    def _opened(self, pool: psycopg_pool.ConnectionPool | None) -> psycopg_pool.ConnectionPool:
        if pool is None:
            raise StoreError(f"the session database {self.where} is not open")
        return pool


def _run(connection: psycopg.Connection, query: str, key: int) -> bool:
    row = connection.execute(query, (_NAMESPACE, key)).fetchone()
    return bool(row and row[0])


def _append(connection: psycopg.Connection, session_id: str, messages: tuple[Message, ...]) -> None:
    now = time.time()
    # The row's lock, taken by the upsert, orders two savers of one session: the second reads
    # the turn count and the last seq only once the first has committed.
    row = connection.execute(
        "INSERT INTO mcpapps_sessions (id, created_at, updated_at, turns) VALUES (%s, %s, %s, 1)"
        " ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at,"
        " turns = mcpapps_sessions.turns + 1 RETURNING turns",
        (session_id, now, now),
    ).fetchone()
    assert row is not None
    turn = row[0]
    last = connection.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM mcpapps_messages WHERE session_id = %s", (session_id,)
    ).fetchone()
    start = last[0] if last else 0
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO mcpapps_messages (session_id, seq, turn, body) VALUES (%s, %s, %s, %s)",
            [
                # ASCII JSON: a lone surrogate or a NUL, which PostgreSQL text cannot hold,
                # is kept as its escape.
                (session_id, start + i, turn, jsonout.dumps(message))
                for i, message in enumerate(messages, 1)
            ],
        )
