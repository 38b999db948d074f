"""Chat sessions: one `ChatSession` actor per session id, run by the `ChatHub`.

A session actor runs its turns one at a time, in the order they arrived: that is the whole of
per-session turn serialization, and other sessions are never held by it. A turn runs in the
session actor, not in the HTTP request that asked for it, so a client that goes away mid-turn
does not stop the turn or its saving. The hub creates a session actor on the first turn for its
id (loading what was saved) and retires it when it has been idle for a while; only the hub sends
turns to a session, so it knows for certain when one has none waiting.

The hub also deletes sessions: one asked for (`mcpapps sessions delete`), refused while it has
a turn running or waiting, and those `[state]`'s retention no longer keeps, chosen at start and
then every ten minutes by one sweep (`actors.chat.retention`). A session being deleted leaves memory
first; a turn sent for it meanwhile waits until the store is done, then starts it afresh.

On shutdown the hub takes no new turns, lets the running ones finish for up to the
grace period while the apps are still up, then cuts the rest short; every waiting client is
told, and every stream ends with `done`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time

import attrs
import trio

from actors import asking
from actors.apps.upstream import ServerRequestRefused
from actors.asking import (
    AnswerRefused,
    NoSuchQuestion,
    Questions,
    TurnAsker,
    answer_refused,
    sample,
)
from actors.chat.agent import Engine
from actors.chat.bridge import CHAT_SESSION
from actors.chat.retention import KEEP_EVERYTHING, RETENTION_EVERY_S, Retention, expired
from actors.chat.sessionstore import (
    Relayed,
    ReplicaSeen,
    SavedSession,
    SessionPage,
    SessionStore,
    StoreError,
    TurnWaitTimeout,
)
from actors.chat.turns import Event, Message, TurnFailed, TurnWaiting, last_turns, messages_so_far
from actors.messages import (
    AnswerQuestion,
    ApplyRetention,
    CancelTurn,
    DeleteSession,
    GetCluster,
    GetSession,
    GetSessionPage,
    HubMessage,
    ListSessions,
    SampleForView,
    SessionListing,
    SessionsDeleted,
    SessionsExpired,
    StopChats,
    Sweep,
    Turn,
    TurnDone,
)
from actors.metrics import Metrics
from actors.runtime import Actor, Mailbox, Reply, ask, unhandled
from supervisor.model.errors import McpappsError

logger = logging.getLogger("mcpapps.chat")

CHAT_DATABASE = "sessions.sqlite3"
IDLE_S = 600.0  # a session with no turn for this long leaves memory (it stays saved)
SWEEP_S = 60.0
HISTORY_TURNS = 50  # [agent] history_turns's default
STOPPING = "the supervisor is stopping: send this message again once it is back"
CUT_SHORT = "the supervisor stopped before this turn was finished; the turn was not saved"
CANCELLED_WAITING = "the turn was cancelled while it waited for another; nothing was kept"
CANCELLED = "the turn was cancelled; what it said and did until then is kept"


class SessionBusy(McpappsError):
    """A session cannot be deleted now: it has a turn running or waiting."""


@attrs.define
class _Entry:
    session: ChatSession
    waiting: int = 0  # turns sent and not yet done
    unsaved: bool = False
    last_done: float = attrs.Factory(trio.current_time)


class ChatHub(Actor[HubMessage]):
    def __init__(
        self,
        engine: Engine,
        store: SessionStore,  # already open
        metrics: Metrics,
        *,
        idle_s: float = IDLE_S,
        retention: Retention = KEEP_EVERYTHING,
        retention_every_s: float = RETENTION_EVERY_S,
        history_turns: int = HISTORY_TURNS,
    ) -> None:
        self.mailbox: Mailbox[HubMessage] = Mailbox()
        self._history_turns = history_turns
        self._engine = engine
        self._store = store
        self._metrics = metrics
        self._idle_s = idle_s
        self._retention = retention
        self._retention_every_s = retention_every_s
        self._sessions: dict[str, _Entry] = {}
        # Sessions being deleted from the store, and the turns sent for them meanwhile.
        self._deleting: dict[str, list[Turn]] = {}
        self._nursery: trio.Nursery | None = None
        self._session_nursery: trio.Nursery | None = None
        self._stopping = trio.Event()
        self._all_done = trio.Event()

    async def _begin(self, nursery: trio.Nursery) -> None:
        await nursery.start(self._host_sessions)
        await nursery.start(self._store.serve_relayed, self._serve_relayed)
        nursery.start_soon(self._sweeper)
        if not self._retention.keeps_everything:
            nursery.start_soon(self._retention_sweeper)

    async def _host_sessions(self, *, task_status: trio.TaskStatus[None]) -> None:
        # Sessions live in a nursery of their own, so that cutting them short at shutdown
        # leaves the hub answering (late requests are told it is stopping).
        async with trio.open_nursery() as sessions:
            self._session_nursery = sessions
            task_status.started()
            await trio.sleep_forever()

    def _handle(self, message: HubMessage) -> None:
        match message:
            case Turn(session_id, _, events):
                if self._stopping.is_set():
                    _refuse(events, STOPPING)
                    return
                if session_id in self._deleting:
                    self._deleting[session_id].append(message)  # it starts once deleted
                    return
                entry = self._sessions.get(session_id)
                if entry is None:
                    entry = self._start_session(session_id)
                entry.waiting += 1
                entry.session.mailbox.tell(message)
            case TurnDone(session_id, unsaved):
                if (entry := self._sessions.get(session_id)) is not None:
                    entry.waiting -= 1
                    entry.unsaved = unsaved
                    entry.last_done = trio.current_time()
                self._check_all_done()
            case GetSession(session_id, reply):
                self._spawn(self._load, session_id, reply)
            case GetCluster(reply):
                self._spawn(self._cluster, reply)
            case GetSessionPage(session_id, before, limit, reply):
                self._spawn(self._load_page, session_id, before, limit, reply)
            case CancelTurn(session_id, reply, here_only):
                entry = self._sessions.get(session_id)
                if entry is not None and entry.session.cancel_turn():
                    reply.send(True)
                elif self._store.shared and not here_only:
                    self._spawn(self._cancel_elsewhere, session_id, reply)
                else:
                    reply.send(False)
            case AnswerQuestion(session_id, request_id, action, content, reply, here_only):
                entry = self._sessions.get(session_id)
                running = entry is not None and entry.session.running
                if self._store.shared and not here_only and not running:
                    self._spawn(self._answer_elsewhere, message)
                    return
                try:
                    if entry is None:
                        raise NoSuchQuestion(f"session '{session_id}' asked no question")
                    entry.session.questions.answer(request_id, action, content)
                    reply.send(None)
                except AnswerRefused as refused:
                    reply.fail(refused)
            case SampleForView():
                self._spawn(self._sample_for_view, message)
            case StopChats(grace, reply):
                self._stopping.set()
                self._check_all_done()
                self._spawn(self._stop, grace, reply)
            case Sweep():
                self._retire_idle()
            case ListSessions(reply):
                busy = frozenset(i for i, e in self._sessions.items() if e.waiting)
                self._spawn(self._list, busy, reply)
            case DeleteSession(session_id, reply):
                entry = self._sessions.get(session_id)
                if entry is not None and entry.waiting:
                    reply.fail(
                        SessionBusy(
                            f"session '{session_id}' has a turn running: cancel it (POST"
                            f" /apps/chat/{session_id}/cancel) or wait for it to end, then"
                            " delete the session"
                        )
                    )
                else:
                    self._delete([session_id], reply)
            case ApplyRetention():
                in_use = frozenset(i for i in self._sessions if self._in_use(i))
                self._spawn(self._find_expired, in_use)
            case SessionsExpired(session_ids):
                # Chosen from the store a moment ago: one that took a turn since stays.
                self._delete([i for i in session_ids if not self._in_use(i)], None)
            case SessionsDeleted(session_ids):
                for session_id in session_ids:
                    for waiting in self._deleting.pop(session_id, ()):
                        self._handle(waiting)
            case _:
                unhandled("chat hub", message)

    def _start_session(self, session_id: str) -> _Entry:
        session = ChatSession(
            session_id,
            self._engine,
            self._store,
            self._metrics,
            self.mailbox,
            self._stopping,
            self._history_turns,
        )
        entry = _Entry(session)
        self._sessions[session_id] = entry
        assert self._session_nursery is not None
        self._session_nursery.start_soon(session.run)
        return entry

    def _in_use(self, session_id: str) -> bool:
        """Whether retention must leave the session alone: a turn runs or waits, or one is
        still to be saved (it will be, with the next)."""
        entry = self._sessions.get(session_id)
        return entry is not None and (entry.waiting > 0 or entry.unsaved)

    def _delete(self, session_ids: list[str], reply: Reply[bool] | None) -> None:
        """Take the sessions out of memory now, and out of the store in a task; a turn sent
        for one of them meanwhile waits for that."""
        session_ids = [i for i in session_ids if i not in self._deleting]
        if not session_ids:
            if reply is not None:
                reply.send(False)  # being deleted already: not this request's to report
            return
        for session_id in session_ids:
            self._deleting[session_id] = []
            if (entry := self._sessions.pop(session_id, None)) is not None:
                entry.session.mailbox.close()
        self._spawn(self._delete_from_store, tuple(session_ids), reply)

    async def _delete_from_store(
        self, session_ids: tuple[str, ...], reply: Reply[bool] | None
    ) -> None:
        try:
            deleted = await self._store.delete_sessions(session_ids)
        except StoreError as error:
            logger.error("chat sessions %s were not deleted: %s", ", ".join(session_ids), error)
            if reply is not None:
                reply.fail(error)
        else:
            if reply is not None:
                reply.send(deleted > 0)
            elif deleted:
                logger.info("deleted %d chat sessions that [state] no longer keeps", deleted)
        finally:
            # Sent, not told: the turns waiting for these sessions must not be dropped.
            await self.mailbox.send(SessionsDeleted(session_ids))

    async def _find_expired(self, in_use: frozenset[str]) -> None:
        try:
            sessions = await self._store.list_sessions()
        except StoreError as error:
            logger.error("chat session retention: %s", error)
            return
        # A session that comes into use meanwhile is left out when the hub gets the answer.
        doomed = expired(sessions, time.time(), self._retention, in_use)
        if doomed:
            self.mailbox.tell(SessionsExpired(tuple(doomed)))

    async def _retention_sweeper(self) -> None:
        while True:
            self.mailbox.tell(ApplyRetention())
            await trio.sleep(self._retention_every_s)

    async def _list(self, running: frozenset[str], reply: Reply[SessionListing]) -> None:
        try:
            reply.send(SessionListing(await self._store.list_sessions(), running))
        except StoreError as error:
            logger.error("chat sessions: %s", error)
            reply.fail(error)

    def _check_all_done(self) -> None:
        if self._stopping.is_set() and all(e.waiting == 0 for e in self._sessions.values()):
            self._all_done.set()

    async def _stop(self, grace: float, reply: Reply[None]) -> None:
        with trio.move_on_after(grace):
            await self._all_done.wait()
        assert self._session_nursery is not None
        self._session_nursery.cancel_scope.cancel()  # what is still running is cut short
        reply.send(None)

    def _retire_idle(self) -> None:
        now = trio.current_time()
        for session_id, entry in list(self._sessions.items()):
            # One with turns not yet saved stays: it will save them with its next turn.
            idle = entry.waiting == 0 and not entry.unsaved
            if idle and now - entry.last_done >= self._idle_s:
                entry.session.mailbox.close()  # its loop ends; nothing more can be sent to it
                del self._sessions[session_id]

    async def _sweeper(self) -> None:
        while True:
            await trio.sleep(min(SWEEP_S, self._idle_s))
            self.mailbox.tell(Sweep())

    async def _load(self, session_id: str, reply: Reply[SavedSession]) -> None:
        try:
            reply.send(await self._store.load(session_id))
        except StoreError as error:
            logger.error("chat session %s: %s", session_id, error)
            reply.fail(error)

    async def _cluster(self, reply: Reply[list[ReplicaSeen]]) -> None:
        try:
            reply.send(await self._store.replicas())
        except StoreError as error:
            reply.fail(error)

    async def _cancel_elsewhere(self, session_id: str, reply: Reply[bool]) -> None:
        """The turn may run on another supervisor that shares the store: it is asked there."""
        try:
            answer = await self._store.relay(session_id, {"kind": "cancel"})
        except StoreError as error:
            reply.fail(error)
            return
        reply.send(bool(answer and answer.get("cancelled")))

    async def _answer_elsewhere(self, message: AnswerQuestion) -> None:
        request = {
            "kind": "answer-question",
            "requestId": message.request_id,
            "action": message.action,
            "content": message.content,
        }
        try:
            answer = await self._store.relay(message.session_id, request)
        except StoreError as error:
            message.reply.fail(error)
            return
        if answer is None:
            # No other supervisor runs a turn of it: answered here, as one not relayed.
            self.mailbox.tell(attrs.evolve(message, here_only=True))
        elif answer.get("refused"):
            message.reply.fail(answer_refused(int(answer["status"]), str(answer["refused"])))
        else:
            message.reply.send(None)

    async def _serve_relayed(self, request: Relayed) -> Relayed:
        """What another supervisor relayed about a turn this one runs."""
        session_id = str(request.get("session"))
        if request.get("kind") == "cancel":
            cancelled: bool = await ask(
                self.mailbox, lambda r: CancelTurn(session_id, r, here_only=True)
            )
            return {"cancelled": cancelled}
        try:
            await ask(
                self.mailbox,
                lambda r: AnswerQuestion(
                    session_id,
                    str(request.get("requestId")),
                    request.get("action"),
                    request.get("content"),
                    r,
                    here_only=True,
                ),
            )
        except AnswerRefused as refused:
            return {"refused": refused.message, "status": refused.status}
        return {}

    async def _load_page(
        self, session_id: str, before: int | None, limit: int, reply: Reply[SessionPage]
    ) -> None:
        try:
            reply.send(await self._store.load_page(session_id, before, limit))
        except StoreError as error:
            logger.error("chat session %s: %s", session_id, error)
            reply.fail(error)

    async def _sample_for_view(self, message: SampleForView) -> None:
        sampler = getattr(self._engine, "sample", None)
        try:
            params = message.params
            result, _ = await sample(
                message.app_id, message.allowed, sampler, self._engine.name, params
            )
            message.reply.send(result)
        except ServerRequestRefused as refused:
            message.reply.fail(refused)


class ChatSession:
    """One conversation: its messages, and the turns that add to them, one at a time."""

    def __init__(
        self,
        session_id: str,
        engine: Engine,
        store: SessionStore,
        metrics: Metrics,
        hub: Mailbox[HubMessage],
        stopping: trio.Event,
        history_turns: int = HISTORY_TURNS,
    ) -> None:
        self.id = session_id
        self._history_turns = history_turns
        self.mailbox: Mailbox[Turn] = Mailbox(math.inf)  # the hub's turn count is the bound
        self._engine = engine
        self._store = store
        self._metrics = metrics
        self._hub = hub
        self._stopping = stopping
        # The last `history_turns` turns, all the engine is given: a session in use all the time
        # is never retired, so a whole history would grow with every turn. Read from the store
        # on the first turn.
        self._history: list[Message] | None = None
        self._unsaved: list[list[Message]] = []  # turns in the history, not yet in the store
        self._turn_scope: trio.CancelScope | None = None  # the running turn's, for CancelTurn
        self.questions = Questions()  # what the apps of the running turn ask the person
        self.running = False  # a turn is taken (waiting for its lock, or running)

    def cancel_turn(self) -> bool:
        """Cancel the running turn, if any (its own scope: the session goes on)."""
        if self._turn_scope is None:
            return False
        self._turn_scope.cancel()
        return True

    async def run(self) -> None:
        try:
            async for turn in self.mailbox:
                async with turn.events:
                    await self._take(turn)
                await self._hub.send(TurnDone(self.id, bool(self._unsaved)))
        finally:
            # Cut short at shutdown: the turns still waiting are answered all the same.
            for turn in self.mailbox.take_waiting():
                _refuse(turn.events, STOPPING)

    async def _take(self, turn: Turn) -> None:
        if self._stopping.is_set():
            _emit(turn.events, TurnFailed(STOPPING))
            return

        def waiting(replica: str) -> None:
            _emit(turn.events, TurnWaiting(replica))

        ran = False
        self.running = True
        try:
            # The wait for another supervisor's turn of this session can be cancelled too.
            wait = self._turn_scope = trio.CancelScope()
            with wait:
                async with self._store.hold_turn(self.id, waiting):
                    self._turn_scope = None
                    if self._history is None or self._store.shared:
                        # Shared: another supervisor may have added turns since this one's last.
                        keep = self._history_turns
                        unsaved = self._unsaved[-keep:]
                        saved = await self._store.load_page(self.id, None, keep - len(unsaved))
                        self._history = [*saved.messages, *(m for t in unsaved for m in t)]
                    ran = True
                    await self._run_turn(turn, self._history)
                    self._history = last_turns(self._history, self._history_turns)
            if wait.cancelled_caught:
                _emit(turn.events, TurnFailed(CANCELLED_WAITING))
        except TurnWaitTimeout as error:
            _emit(turn.events, TurnFailed(str(error)))
        except StoreError as error:
            logger.error("chat session %s: %s", self.id, error)
            if not ran:
                _emit(turn.events, TurnFailed(f"the session could not be loaded: {error}"))
        except Exception as error:  # a bug ends this turn, never the session or the others
            logger.exception("chat session %s: the turn failed", self.id)
            _emit(turn.events, TurnFailed(f"internal error in mcpapps: {error!r}; see the log"))
        finally:
            self._turn_scope = None
            self.running = False

    async def _run_turn(self, turn: Turn, history: list[Message]) -> None:
        started = time.monotonic()
        failed = False
        emitted: list[Event] = []  # what a cancelled turn did is saved from these

        def emit(event: Event) -> None:
            nonlocal failed
            failed = failed or isinstance(event, TurnFailed)
            emitted.append(event)
            _emit(turn.events, event)

        added: list[Message] = []
        scope = self._turn_scope = trio.CancelScope()
        sampler = getattr(self._engine, "sample", None)
        asker = TurnAsker(self.id, self.questions, emit, sampler, self._engine.name)
        asked = asking.CURRENT.set(asker)
        session = CHAT_SESSION.set(self.id)
        try:
            with scope:
                added = await self._engine.run_turn(tuple(history), turn.user, emit)
        except trio.Cancelled:
            emit(TurnFailed(CUT_SHORT))
            raise
        except Exception as error:  # an engine bug ends this turn, not the session
            logger.exception("chat session %s: the %s engine failed", self.id, self._engine.name)
            emit(TurnFailed(f"internal error in the {self._engine.name} engine: {error!r}"))
        finally:
            self._turn_scope = None
            CHAT_SESSION.reset(session)
            asking.CURRENT.reset(asked)
            self.questions.cancel_all("its turn ended, so it was cancelled")
        if scope.cancelled_caught:
            # The engine was stopped mid-way and returned nothing: what the person saw
            # happen (text, calls started, their results) is kept, the unanswered call as
            # cancelled.
            added = messages_so_far(emitted)
            emit(TurnFailed(CANCELLED))
        messages = [turn.user.message(), *added]
        history.extend(messages)
        self._unsaved.append(messages)
        # Saving must finish even when the supervisor is stopping: the turn is complete. Turns
        # whose saving failed are saved with the next one, so the saved conversation has no
        # hole.
        with trio.CancelScope(shield=True):
            try:
                await self._store.save_turns(self.id, self._unsaved)
                self._unsaved.clear()
            except StoreError as error:
                logger.error("chat session %s: the turn was not saved: %s", self.id, error)
                emit(TurnFailed(f"the turn was not saved: {error}"))
        self._metrics.observe_turn(self._engine.name, time.monotonic() - started, not failed)


def _emit(events: trio.MemorySendChannel[Event], event: Event) -> None:
    # The reader may be gone (the client left) or slow; neither may hold up the turn.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, trio.WouldBlock):
        events.send_nowait(event)


def _refuse(events: trio.MemorySendChannel[Event], why: str) -> None:
    _emit(events, TurnFailed(why))
    events.close()
