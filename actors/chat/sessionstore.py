"""What the chat hub and its sessions ask of the place chat sessions are kept: the
`SessionStore` protocol, the values it answers with and its one error.

Two stores implement it: SQLite in the state dir (`actors/chat/chatstore.py`, the embedded default,
one supervisor) and PostgreSQL (`actors/chat/pgstore.py`, shared by several supervisors behind one
address). `actors/chat/stores.py` picks one from `[state]`. Each is held to the same contract
(tests/test_sessionstore.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import attrs
import trio

from actors.chat.turns import Message
from supervisor.model.errors import McpappsError


class StoreError(McpappsError):
    """The session store cannot be used; the message says which one and why."""


class TurnWaitTimeout(StoreError):
    """Another supervisor held the session's turn for longer than `[state] turn_wait_s`."""


@attrs.frozen
class SavedSession:
    id: str
    messages: tuple[Message, ...]
    turns: int
    created_at: float | None = None
    updated_at: float | None = None


@attrs.frozen
class ReplicaSeen:
    """A supervisor that shares the store, as its last heartbeat said (times: Unix seconds).
    `silent_s` is how long ago that was, by the store's clock."""

    id: str
    url: str
    version: str
    started: float
    apps: tuple[tuple[str, str], ...]  # (app id, state)
    last_seen: float = 0.0
    silent_s: float = 0.0


@attrs.frozen
class SessionPage:
    """Some consecutive turns of a saved session, the latest first asked for: the turns
    `first_turn` to `last_turn` (numbered from 1), of `turns` in all. An empty page (no such
    session, or nothing before the turn asked for) has `first_turn` = `last_turn` + 1."""

    id: str
    messages: tuple[Message, ...]
    turns: int
    first_turn: int
    last_turn: int


@attrs.frozen
class SessionSummary:
    """A saved session as a listing shows it: no messages. Times are Unix seconds."""

    id: str
    turns: int
    created_at: float
    updated_at: float


Waiting = Callable[[str], None]
"""Told, once, that the turn waits for another supervisor (its replica id) to finish one."""

Relayed = Mapping[str, Any]
"""A request about a session's running turn passed to the supervisor that runs it (cancel, an
answer to an app's question), and what it answered: small JSON objects."""
Serve = Callable[[Relayed], Awaitable[Relayed]]


class RelayFailed(StoreError):
    """The supervisor that runs the turn did not answer a relayed request."""


class SessionStore(Protocol):
    # Other supervisors write this store too: a session's history is read afresh at each turn,
    # and `hold_turn` is what keeps its turns in order across them.
    @property
    def shared(self) -> bool: ...

    @property
    def where(self) -> str:
        """Where the sessions are kept, for the log (never with a password)."""
        ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def load(self, session_id: str) -> SavedSession:
        """The saved session, or an empty one if there is none yet."""
        ...

    async def load_page(self, session_id: str, before: int | None, limit: int) -> SessionPage:
        """At most `limit` turns of the session, the last ones before turn `before` (all of
        its latest when None)."""
        ...

    async def list_sessions(self) -> tuple[SessionSummary, ...]:
        """Every saved session, the one with the latest turn first."""
        ...

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions (all or none); returns how many there were."""
        ...

    async def save_turn(self, session_id: str, messages: Sequence[Message]) -> None:
        """Append one finished turn's messages (all or nothing)."""
        ...

    async def save_turns(self, session_id: str, turns: Sequence[Sequence[Message]]) -> None:
        """Append finished turns, each as its own turn, all in one transaction."""
        ...

    def hold_turn(self, session_id: str, waiting: Waiting) -> AbstractAsyncContextManager[None]:
        """The session's turn, held while the block runs: no other supervisor runs one of its
        turns meanwhile. `waiting` is told when another holds it; `TurnWaitTimeout` when it
        held it too long."""
        ...

    async def heartbeat(self, replica: ReplicaSeen) -> None:
        """Say this supervisor is alive, and what it runs; forget those long silent."""
        ...

    async def replicas(self) -> list[ReplicaSeen]:
        """Every supervisor that shares the store, this one included, as last seen."""
        ...

    async def serve_relayed(
        self, serve: Serve, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Answer, with `serve`, what other supervisors relay to this one, until cancelled."""
        ...

    async def relay(self, session_id: str, request: Relayed) -> Relayed | None:
        """`request` answered by the supervisor running a turn of the session, or None when no
        other supervisor runs one."""
        ...
