"""An app's process as the transport of its MCP session, for one incarnation: spawned, watched
until it exits (or closes its stdout), its stderr kept, and taken down the stop ladder when the
incarnation ends, whatever ends it.

The process's own word on its death (its exit status, its last stderr line) says more than the
broken pipe the session sees a moment earlier, so each way out gives it that moment first.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import trio

from actors.apps.death import Exited, StdoutClosed
from actors.apps.processgroup import ChildProcess
from actors.apps.reaper import Reaper
from actors.apps.stdio import StdioTransport, pump_stderr

if TYPE_CHECKING:  # it imports this module: it runs the transport
    from actors.apps.incarnation import Incarnation

logger = logging.getLogger("mcpapps.app")

STDERR_LINES = 200
STDERR_DRAIN_S = 0.5  # after an exit, how long the last stderr lines may take to arrive


class StderrTail:
    """The last lines an app's processes wrote to stderr (kept across restarts, for status),
    and which of them the current process wrote (a hint quotes only those)."""

    def __init__(self, app_id: str, lines: int = STDERR_LINES) -> None:
        self.app_id = app_id
        self.lines: collections.deque[str] = collections.deque(maxlen=lines)
        self._total = 0  # lines ever read
        self._mark = 0  # `_total` when the current process started

    def add(self, line: str) -> None:
        self.lines.append(line)
        self._total += 1
        logger.info("app %s stderr: %s", self.app_id, line)

    def new_process(self) -> None:
        self._mark = self._total

    def hint(self) -> str:
        """The current process's last stderr line, as a clause for a reason; or nothing."""
        if not self.lines or self._total == self._mark:
            return ""  # nothing from this process: an older line would mislead
        return f"; last stderr line: {self.lines[-1][:300]}"


@contextlib.asynccontextmanager
async def stdio_child(
    incarnation: Incarnation,
    *,
    app_id: str,
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    stop_grace_s: float,
    tail: StderrTail,
    reaper: Reaper | None,
    start_task: Callable[[Callable[[], Awaitable[None]]], None],
    on_failure: Callable[[BaseException], None],
    linger: Callable[[Callable[[], Awaitable[None]]], None] | None = None,
) -> AsyncIterator[Any]:
    """Spawn the app's process and yield the streams an SDK `Client` takes. Its watchers run
    as `start_task` starts them (tasks of the incarnation) and declare its death when the
    process exits or closes its stdout; `on_failure` is told of an error of the session
    before the (possibly slow) stop ladder. `linger` starts a task that may outlive the
    incarnation (the app actor's): it takes down what a process that died by itself left
    in its group, so that the app's restart does not wait for it."""
    child = ChildProcess.spawn(list(command), env=dict(env), cwd=cwd)
    incarnation.pid = child.pid
    if reaper is not None:
        reaper.watch(child.pid)
    logger.info("app %s: started pid %d: %s", app_id, child.pid, command[0])
    stderr_done = trio.Event()
    stderr_read_to_end = False
    stdout_closed = trio.Event()
    stopping = False

    async def stderr() -> None:
        nonlocal stderr_read_to_end
        try:
            await pump_stderr(child, tail.add)
            stderr_read_to_end = True
        finally:
            stderr_done.set()

    async def exited_by_itself(code: int) -> None:
        # The last stderr lines usually say why; give them a moment to arrive.
        with trio.CancelScope(shield=True), trio.move_on_after(STDERR_DRAIN_S):
            await stderr_done.wait()
        incarnation.declare(Exited(code, tail.hint()))

    async def watch() -> None:
        code = await child.wait()
        incarnation.pid = None  # reaped: the status must not show a pid that may be reused
        if not stopping:
            await exited_by_itself(code)

    async def watch_stdout() -> None:
        # An app that closes its stdout can answer nothing more, even if it lives on. An
        # exiting process closes it a moment before its status is known: wait for that.
        await stdout_closed.wait()
        with trio.move_on_after(STDERR_DRAIN_S * 2):
            await incarnation.died.wait()
        incarnation.declare(StdoutClosed())

    try:
        start_task(stderr)
        start_task(watch)
        start_task(watch_stdout)
        yield StdioTransport(child, app_id, stdout_closed.set)  # the SDK client enters it
    except Exception as error:
        # The session broke. A dying child closes its stdout a moment before it can be
        # reaped, and its exit status is the better reason: give it that moment.
        with trio.CancelScope(shield=True), trio.move_on_after(STDERR_DRAIN_S):
            await child.exited.wait()
        if (code := child.poll()) is not None:
            await exited_by_itself(code)
        elif stdout_closed.is_set():
            incarnation.declare(StdoutClosed())
        on_failure(error)  # before the stop ladder, which may be slow
        raise
    finally:
        stopping = True
        # Shielded: this runs under cancellation too (stop, start-up deadline), and every
        # step must happen or a process, a pipe or a reaper entry would be left behind.
        with trio.CancelScope(shield=True):
            if (code := child.poll()) is not None:
                await exited_by_itself(code)
            # The process died by itself: what it left in its group (a grandchild) is taken
            # down beside the next incarnation, not before it.
            orphans = linger is not None and child.leader_exited() and child.group_alive()
            if not orphans:
                await child.stop(stop_grace_s)
            # What the app wrote to stderr as it stopped (what it cancelled, why it ended) is
            # read before the pipes close, also when the incarnation's reader was cut short.
            with trio.move_on_after(STDERR_DRAIN_S):
                if not stderr_done.is_set():
                    await stderr_done.wait()
                elif not stderr_read_to_end:
                    await pump_stderr(child, tail.add)
            await child.close_pipes()
        incarnation.pid = None
        if orphans and linger is not None:
            linger(functools.partial(_end_orphans, child, app_id, stop_grace_s, reaper))
        elif reaper is not None:
            reaper.forget(child.pid)


async def _end_orphans(
    child: ChildProcess, app_id: str, stop_grace_s: float, reaper: Reaper | None
) -> None:
    """The stop ladder for what a dead app process left in its group."""
    logger.info("app %s: stopping what pid %d left behind", app_id, child.pid)
    try:
        await child.stop(stop_grace_s)
    finally:
        if reaper is not None:
            reaper.forget(child.pid)
