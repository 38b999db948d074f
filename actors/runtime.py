"""The actor runtime: mailboxes, one-shot replies, tell and ask.

An actor is a task that owns some state and a `Mailbox`; everyone else talks to it with messages.
`tell` sends a fact or a command and does not wait for an answer. `ask` sends a request that carries
its own `Reply` and waits for the answer under a deadline, so a stuck actor costs the caller a
timeout error, never a hang.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Generic, Never, Protocol, TypeVar

import attrs
import trio

from supervisor.model.errors import ActorUnavailable

logger = logging.getLogger("mcpapps.runtime")

T = TypeVar("T")
M = TypeVar("M")
T_contra = TypeVar("T_contra", contravariant=True)

# A bounded mailbox gives back-pressure instead of unbounded memory when an actor falls behind;
# the bound is generous because every message is small and handlers never block on slow work.
MAILBOX_SIZE = 1024
# How long a caller outside the actors (an HTTP route) waits for an actor's answer.
ASK_TIMEOUT_S = 10.0


class Overloaded(ActorUnavailable):
    """The actor could not take the request (its mailbox is full, or it has stopped)."""


class AskTimeout(ActorUnavailable):
    """The actor did not answer before the deadline."""


@attrs.frozen
class _Failed:
    error: BaseException


class Reply(Generic[T]):
    """Where the answer to one request goes: it takes one value or one error, later ones are
    dropped (a caller that gave up does not block the actor that answers late)."""

    __slots__ = ("_answered", "_value")

    def __init__(self) -> None:
        # An event and a slot, not a channel: every request through the gateway makes one.
        self._answered = trio.Event()
        self._value: Any = None

    def send(self, value: T) -> None:
        if not self._answered.is_set():
            self._value = value
            self._answered.set()

    def fail(self, error: BaseException) -> None:
        self.send(_Failed(error))  # type: ignore[arg-type]

    async def wait(self) -> T:
        await self._answered.wait()
        value = self._value
        if isinstance(value, _Failed):
            raise value.error
        return value


class Answer(Protocol[T_contra]):
    """Where a request is answered: a `Reply`, a `Forward`, or anything else that takes one
    value or one error (a round trip's exchange in the front door)."""

    def send(self, value: T_contra) -> None: ...

    def fail(self, error: BaseException) -> None: ...


class Recipient(Protocol[T_contra]):
    """Anything a message can be told to: a `Mailbox`, or a stand-in that marks what it is
    told before passing it on (how the registry knows which app actor a fact came from)."""

    def tell(self, message: T_contra) -> None: ...


class Forward(Generic[T]):
    """Answers a request on someone else's `Reply`, transformed on the way: a router hands the
    actor that does the work a `Forward` instead of starting a task that waits to relay."""

    def __init__(self, target: Answer[Any], transform: Callable[[T], Any]) -> None:
        self._target = target
        self._transform = transform

    def send(self, value: T) -> None:
        self._target.send(self._transform(value))

    def fail(self, error: BaseException) -> None:
        self._target.fail(error)


class Abandonment:
    """Set once, by whoever asked for a request, when it gives up on it (its client cancelled
    or went away); the actor running the request has it cancel that work at once. A cancel
    scope is cancelled from `set` itself: no task per request waits for it."""

    def __init__(self) -> None:
        self._set = False
        self._scopes: set[trio.CancelScope] = set()

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        for scope in self._scopes:
            scope.cancel()
        self._scopes.clear()

    def is_set(self) -> bool:
        return self._set

    @contextlib.contextmanager
    def cancels(self) -> Iterator[trio.CancelScope]:
        """A cancel scope that is cancelled when (or if already) this is set."""
        with trio.CancelScope() as scope:
            if self._set:
                scope.cancel()
            else:
                self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)


class Mailbox(Generic[M]):
    """The inbox of one actor. Only the owner receives from it; anyone may send."""

    def __init__(self, size: int | float = MAILBOX_SIZE) -> None:
        self._send, self._receive = trio.open_memory_channel[M](size)

    def tell(self, message: M) -> None:
        """Send without waiting. A full or closed mailbox fails a request at once (its caller
        must hear why). A fact is not worth blocking the sender for: a closed mailbox drops it
        (the actor is gone and nobody needs it), a full one drops it with an error in the log,
        since the actor is hopelessly behind and what it knows is now out of date."""
        try:
            self._send.send_nowait(message)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError) as error:
            busy = isinstance(error, trio.WouldBlock)
            reply = getattr(message, "reply", None)
            if reply is not None:
                reply.fail(Overloaded("too busy: its mailbox is full" if busy else "stopped"))
            elif busy:
                logger.error(
                    "an actor's mailbox is full (%d messages): dropped %s",
                    self._send.statistics().max_buffer_size,
                    type(message).__name__,
                )

    async def send(self, message: M) -> None:
        await self._send.send(message)

    def put_nowait(self, message: M) -> None:
        """Put a message in the mailbox if there is room now, or raise `trio.WouldBlock`."""
        self._send.send_nowait(message)

    def close(self) -> None:
        self._send.close()

    def take_waiting(self) -> list[M]:
        """Every message sent and not yet received (for an actor that stops and must answer
        them, since nobody else will)."""
        taken: list[M] = []
        with contextlib.suppress(trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            while True:
                taken.append(self._receive.receive_nowait())
        return taken

    def __aiter__(self) -> trio.MemoryReceiveChannel[M]:
        return self._receive


async def ask(mailbox: Mailbox[M], make: Callable[[Reply[T]], M], timeout: float = math.inf) -> T:
    """Send the request `make(reply)` and wait up to `timeout` s for the answer to its reply.
    The request must be a message the mailbox takes: one meant for another actor is a type
    error."""
    reply: Reply[T] = Reply()
    request = make(reply)
    await trio.lowlevel.checkpoint_if_cancelled()
    # No deadline, no cancel scope: asking is on the way of every call through the gateway.
    with trio.move_on_after(timeout) if timeout != math.inf else contextlib.nullcontext():
        try:
            # Put in the mailbox at once when there is room (the usual case): waiting for the
            # answer is this task's scheduling round, and a second one before it would only
            # add latency. A full mailbox makes the caller wait for room, as before.
            mailbox.put_nowait(request)
        except trio.WouldBlock:
            try:
                await mailbox.send(request)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise AskTimeout("the actor has stopped") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise AskTimeout("the actor has stopped") from None
        return await reply.wait()
    raise AskTimeout(f"no answer within {timeout:g} s")


class Actor(Generic[M]):
    """The skeleton every actor shares, as OTP's gen_server: a nursery for the work it spawns,
    and its mailbox served one message at a time by `_handle`, which never blocks (slow work is
    spawned). `_begin` starts what runs beside the mailbox, before the actor reports started;
    the order matters (the registry starts its app actors there before it says it is up)."""

    mailbox: Mailbox[M]
    _nursery: trio.Nursery | None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the mailbox until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self._begin(nursery)
            task_status.started()
            async for message in self.mailbox:
                self._handle(message)

    async def _begin(self, nursery: trio.Nursery) -> None:
        """What runs beside the mailbox; nothing unless an actor says otherwise."""

    def _handle(self, message: M) -> None:
        raise NotImplementedError

    def _spawn(self, fn: Callable[..., Awaitable[object]], *args: object) -> None:
        assert self._nursery is not None, "spawned before run()"
        self._nursery.start_soon(fn, *args)


def unhandled(actor: str, message: Never) -> None:
    """The last case of an actor's `match` over its message union: mypy proves it unreachable
    (each message of the union has its case). Should a message slip past the types at run
    time, it is logged, not raised, so that the actor lives on."""
    logger.error("%s: unknown message %r", actor, message)
