"""Chat sessions (SPEC §7.4): one `ChatSession` actor per session id, run by the `ChatHub`.

A session actor runs its turns one at a time, in the order they arrived: that is the whole of
per-session turn serialization, and other sessions are never held by it. A turn runs in the
session actor, not in the HTTP request that asked for it, so a client that goes away mid-turn
does not stop the turn or its saving. The hub creates a session actor on the first turn for its
id (loading what was saved) and retires it when it has been idle for a while; only the hub sends
turns to a session, so it knows for certain when one has none waiting.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from typing import Any

import attrs
import trio

from actors.agent import Engine, Event, Message, TurnError, UserTurn
from actors.chatstore import ChatStore, SavedSession, StoreError
from actors.runtime import Mailbox, Reply
from supervisor.metrics import Metrics

logger = logging.getLogger("mcpapps.chat")

CHAT_DATABASE = "sessions.sqlite3"
IDLE_S = 600.0  # a session with no turn for this long leaves memory (it stays saved)
SWEEP_S = 60.0


@attrs.frozen
class Turn:
    """Run one turn of `session_id`; its events go to `events`, which is closed when the turn
    is over and saved. Nobody need read them: a client may leave."""

    session_id: str
    user: UserTurn
    events: trio.MemorySendChannel[Event]


@attrs.frozen
class GetSession:
    """What is saved of a session (no turn in progress is in it)."""

    session_id: str
    reply: Reply[SavedSession]


@attrs.frozen
class _TurnDone:
    session_id: str


@attrs.frozen
class _Sweep:
    pass


@attrs.define
class _Entry:
    session: ChatSession
    waiting: int = 0  # turns sent and not yet done
    last_done: float = attrs.Factory(trio.current_time)


class ChatHub:
    def __init__(
        self,
        engine: Engine,
        store: ChatStore,  # already open
        metrics: Metrics,
        *,
        idle_s: float = IDLE_S,
    ) -> None:
        self.mailbox: Mailbox[Any] = Mailbox()
        self._engine = engine
        self._store = store
        self._metrics = metrics
        self._idle_s = idle_s
        self._sessions: dict[str, _Entry] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._sweeper)
            task_status.started()
            async for message in self.mailbox:
                self._handle(message)

    def _handle(self, message: Any) -> None:
        match message:
            case Turn(session_id):
                entry = self._sessions.get(session_id)
                if entry is None:
                    entry = self._start_session(session_id)
                entry.waiting += 1
                entry.session.mailbox.tell(message)
            case _TurnDone(session_id):
                if (entry := self._sessions.get(session_id)) is not None:
                    entry.waiting -= 1
                    entry.last_done = trio.current_time()
            case GetSession(session_id, reply):
                self._spawn(self._load, session_id, reply)
            case _Sweep():
                self._retire_idle()
            case _:
                logger.error("chat hub: unknown message %r", message)

    def _start_session(self, session_id: str) -> _Entry:
        session = ChatSession(
            session_id,
            self._engine,
            self._store,
            self._metrics,
            done=lambda: self.mailbox.tell(_TurnDone(session_id)),
        )
        entry = _Entry(session)
        self._sessions[session_id] = entry
        self._spawn(session.run)
        return entry

    def _retire_idle(self) -> None:
        now = trio.current_time()
        for session_id, entry in list(self._sessions.items()):
            if entry.waiting == 0 and now - entry.last_done >= self._idle_s:
                entry.session.mailbox.close()  # its loop ends; nothing more can be sent to it
                del self._sessions[session_id]

    async def _sweeper(self) -> None:
        while True:
            await trio.sleep(min(SWEEP_S, self._idle_s))
            self.mailbox.tell(_Sweep())

    async def _load(self, session_id: str, reply: Reply[SavedSession]) -> None:
        try:
            reply.send(await self._store.load(session_id))
        except StoreError as error:
            reply.fail(error)

    def _spawn(self, fn: Any, *args: Any) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(fn, *args)


class ChatSession:
    """One conversation: its messages, and the turns that add to them, one at a time."""

    def __init__(
        self,
        session_id: str,
        engine: Engine,
        store: ChatStore,
        metrics: Metrics,
        *,
        done: Any,
    ) -> None:
        self.id = session_id
        self.mailbox: Mailbox[Turn] = Mailbox(math.inf)  # the hub's turn count is the bound
        self._engine = engine
        self._store = store
        self._metrics = metrics
        self._done = done
        self._history: list[Message] = []

    async def run(self) -> None:
        loaded = False
        async for turn in self.mailbox:
            async with turn.events:
                if not loaded:
                    loaded = await self._load(turn.events)
                if loaded:
                    await self._run_turn(turn)
            self._done()

    async def _load(self, events: trio.MemorySendChannel[Event]) -> bool:
        try:
            saved = await self._store.load(self.id)
        except StoreError as error:
            logger.error("chat session %s: %s", self.id, error)
            _emit(events, TurnError(f"the session could not be loaded: {error}"))
            return False
        self._history = list(saved.messages)
        return True

    async def _run_turn(self, turn: Turn) -> None:
        started = time.monotonic()
        failed = False

        def emit(event: Event) -> None:
            nonlocal failed
            failed = failed or isinstance(event, TurnError)
            _emit(turn.events, event)

        user = turn.user.message()
        try:
            added = await self._engine.run_turn(tuple(self._history), turn.user, emit)
        except Exception as error:  # an engine bug ends this turn, not the session
            logger.exception("chat session %s: the %s engine failed", self.id, self._engine.name)
            emit(TurnError(f"internal error in the {self._engine.name} engine: {error!r}"))
            added = []
        messages = [user, *added]
        self._history.extend(messages)
        # Saving must finish even when the supervisor is stopping: the turn is complete.
        with trio.CancelScope(shield=True):
            try:
                await self._store.save_turn(self.id, messages)
            except StoreError as error:
                logger.error("chat session %s: the turn was not saved: %s", self.id, error)
                emit(TurnError(f"the turn was not saved: {error}"))
        self._metrics.observe_turn(self._engine.name, time.monotonic() - started, not failed)


def _emit(events: trio.MemorySendChannel[Event], event: Event) -> None:
    # The reader may be gone (the client left) or slow; neither may hold up the turn.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, trio.WouldBlock):
        events.send_nowait(event)
