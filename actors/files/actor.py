"""The workspace actor: the one owner of the host resources (`ResourceTable`), the locks that
keep two saves of one file apart, and the watcher of the workspace's changes.

Its mailbox does only what is quick (a URI resolved, a subscription noted, a lease forgotten);
file work (a read, a save, a listing) runs in a worker thread, from a task of the actor's own
nursery, so a slow disk never holds the mailbox. Saves of one file take its lock in turn: the
ETag check and the rename of one save finish before the next save of that file begins.

The watcher (`watchfiles`, inotify on Linux) runs only while someone listens: a subscribed view
or a live Files pane. It watches the whole root once, recursively, and tells each subscriber
of a changed file `ResourceUpdated`, whoever changed it (a save through the host, an editor, a
`git checkout`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import trio
import watchfiles

from actors.files.confine import FileRefused, NoSuchFile
from actors.files.messages import (
    EndLease,
    ListFolder,
    Opened,
    OpenFile,
    ReadResource,
    ResourceUpdated,
    SaveOutcome,
    Subscribe,
    Unsubscribe,
    WatchWorkspace,
    WorkspaceChanged,
    WorkspaceMessage,
    WriteResource,
)
from actors.files.resources import HostResource, ResourceTable, UnknownResource
from actors.files.workspace import (
    TEMP_PREFIX,
    ChangedSince,
    TooLarge,
    Workspace,
    WriteOutcome,
    WriteRefused,
    encode,
    read_result,
    write_result,
)
from actors.metrics import Metrics
from actors.runtime import Actor, Mailbox, Reply, unhandled
from supervisor.model.errors import McpappsError
from supervisor.model.workspace import WorkspaceConfig

logger = logging.getLogger("mcpapps.files")

T = TypeVar("T")

# File work at once, in worker threads: enough for a few views reading while one saves, few
# enough that a burst of requests queues instead of starting a thread each.
WORKER_THREADS = 4
# A batch of changes ends once none has come for QUIET_MS, or after DEBOUNCE_MS: an editor's
# save (a temporary file, a rename) is one batch, and a view hears of it within a second.
QUIET_MS = 50
DEBOUNCE_MS = 500


class WorkspaceActor(Actor[WorkspaceMessage]):
    def __init__(self, config: WorkspaceConfig, metrics: Metrics | None = None) -> None:
        self.mailbox: Mailbox[WorkspaceMessage] = Mailbox()
        self._nursery = None
        self.workspace = Workspace(config)
        self.table = ResourceTable()
        self._metrics = metrics
        self._locks: dict[Path, trio.Lock] = {}
        self._threads = trio.CapacityLimiter(WORKER_THREADS)
        self._channels: list[trio.MemorySendChannel[WorkspaceChanged]] = []
        self._watch_scope: trio.CancelScope | None = None
        self._watch_stop: anyio.Event | None = None
        self._watch_starting = trio.Lock()
        # Opens under way per lease, and the leases that ended meanwhile: a URI is never minted
        # for a view that ended while its file was being looked up (bounded: a lease is
        # forgotten here once its last open is done).
        self._opening: dict[str, int] = {}
        self._ended_while_opening: set[str] = set()

    def _handle(self, message: WorkspaceMessage) -> None:
        match message:
            case OpenFile(lease, path, reply):
                self._opening[lease] = self._opening.get(lease, 0) + 1
                self._spawn(self._open, lease, path, reply)
            case ReadResource(lease, uri, representation, reply):
                if (resource := self._resolve(lease, uri, reply)) is not None:
                    self._spawn(self._read, resource, representation, reply)
            case WriteResource(lease, uri, text, blob, if_match, reply):
                if (resource := self._resolve(lease, uri, reply)) is not None:
                    self._spawn(self._write, resource, text, blob, if_match, reply)
            case Subscribe(lease, uri, to, reply):
                if (resource := self._resolve(lease, uri, reply)) is not None:
                    resource.subscribers.add(to)
                    self._spawn(self._then_watch, reply)
            case Unsubscribe(lease, uri, to, reply):
                if (resource := self._resolve(lease, uri, reply)) is not None:
                    resource.subscribers.discard(to)
                    self._stop_watching_if_unheard()
                    reply.send(None)
            case EndLease(lease):
                if lease in self._opening:
                    self._ended_while_opening.add(lease)
                for resource in self.table.end_lease(lease):
                    lock = self._locks.get(resource.path)
                    if (
                        lock is not None
                        and not lock.locked()
                        and not any(self.table.at(resource.path))
                    ):
                        del self._locks[resource.path]
                self._stop_watching_if_unheard()
            case ListFolder(path, reply):
                self._spawn(self._list, path, reply)
            case WatchWorkspace(channel, reply):
                self._channels.append(channel)
                self._spawn(self._then_watch, reply)
            case _:
                unhandled("workspace", message)

    def _resolve(self, lease: str, uri: str, reply: Reply[Any]) -> HostResource | None:
        try:
            return self.table.resolve(lease, uri)
        except FileRefused as error:
            reply.fail(error)
            return None

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args, limiter=self._threads)

    async def _open(self, lease: str, path: str, reply: Reply[Opened]) -> None:
        try:
            async with _answering(reply):
                located = await self._in_thread(self.workspace.locate, path)
                if lease in self._ended_while_opening:
                    raise UnknownResource("the view ended while its file was being opened")
                resource = self.table.mint(lease, located.path, located.relative, located.name)
                reply.send(
                    Opened(resource.uri, resource.name, str(resource.path), resource.relative)
                )
        finally:
            self._opening[lease] -= 1
            if not self._opening[lease]:
                del self._opening[lease]
                self._ended_while_opening.discard(lease)

    async def _read(
        self, resource: HostResource, representation: Any, reply: Reply[dict[str, Any]]
    ) -> None:
        async with _answering(reply):
            content = await self._in_thread(self.workspace.read, resource.path)
            result = read_result(resource.uri, resource.name, content, representation)
            # What this read said is what a save is held to: the spec lets a view save only
            # a file it read as writable.
            resource.read_writable = content.writable
            reply.send(result)

    async def _write(
        self,
        resource: HostResource,
        text: str | None,
        blob: str | None,
        if_match: str | None,
        reply: Reply[dict[str, Any]],
    ) -> None:
        outcome: SaveOutcome = "refused"
        try:
            async with _answering(reply):
                if not resource.read_writable:
                    raise WriteRefused(
                        f"'{resource.name}' was not read as writable: read it first"
                        " (resources/read), and save only when it says writable: true"
                    )
                data = encode(text, blob, self.workspace.config.max_write_bytes)
                answer: WriteOutcome
                if isinstance(data, TooLarge):
                    answer = data
                else:
                    lock = self._locks.setdefault(resource.path, trio.Lock())
                    async with lock:
                        answer = await self._in_thread(
                            self.workspace.write, resource.path, data, if_match
                        )
                if isinstance(answer, ChangedSince) and answer.etag is None:
                    raise NoSuchFile(
                        f"'{resource.name}' no longer exists: nothing is saved (save"
                        " without ifMatch to create it again)"
                    )
                result = write_result(answer)
                outcome = result["outcome"]
                reply.send(result)
        finally:
            self._saved(resource, outcome, if_match is not None)

    def _saved(self, resource: HostResource, outcome: SaveOutcome, conditional: bool) -> None:
        """One log line and one count per save, whatever came of it."""
        logger.info(
            "save of %s by view %s…: %s%s",
            resource.relative,
            resource.lease[:6],
            outcome,
            "" if conditional else " (no ifMatch: last writer wins)",
        )
        if self._metrics is not None:
            self._metrics.observe_save(outcome)

    async def _list(self, path: str, reply: Reply[Any]) -> None:
        async with _answering(reply):
            reply.send(await self._in_thread(self.workspace.list_folder, path))

    # The watcher.

    async def _then_watch(self, reply: Reply[None]) -> None:
        """Make sure the watcher runs, then answer: a change made once a subscription is
        answered is never missed."""
        async with self._watch_starting:
            if self._watch_scope is None and self._heard():
                assert self._nursery is not None
                await self._nursery.start(self._watch)
        reply.send(None)

    def _heard(self) -> bool:
        return bool(self._channels) or self.table.subscribed()

    def _stop_watching_if_unheard(self) -> None:
        if self._watch_scope is not None and not self._heard():
            assert self._watch_stop is not None
            self._watch_stop.set()
            self._watch_scope.cancel()
            self._watch_scope = self._watch_stop = None

    async def _watch(self, task_status: trio.TaskStatus[None]) -> None:
        stop = anyio.Event()
        changes = watchfiles.awatch(
            self.workspace.root,
            watch_filter=_not_a_save_in_progress,
            debounce=DEBOUNCE_MS,
            step=QUIET_MS,
            stop_event=stop,
        )
        with trio.CancelScope() as scope:
            self._watch_scope, self._watch_stop = scope, stop
            # `started` wakes the asker only at this task's next checkpoint, and `awatch` sets
            # up its inotify watches before its first one: the watcher is live when it hears.
            task_status.started()
            try:
                async for batch in changes:
                    self._changed({Path(path) for _, path in batch})
            except Exception:
                logger.exception("the workspace watcher failed: changes are not reported")
            finally:
                # The watcher waits in a worker thread that a cancellation cannot reach; the
                # stop event ends that wait within a step.
                stop.set()
        if self._watch_scope is scope:
            self._watch_scope = self._watch_stop = None

    def _changed(self, paths: set[Path]) -> None:
        for resource in [r for p in paths for r in self.table.at(p)]:
            for to in list(resource.subscribers):
                to.tell(ResourceUpdated(resource.lease, resource.uri))
        root = self.workspace.root
        shown = sorted(
            rel
            for p in paths
            if p.is_relative_to(root)
            and (rel := str(p.relative_to(root))) != "."
            and not any(part.startswith(".") for part in Path(rel).parts)
        )
        if shown:
            self._publish(WorkspaceChanged(tuple(shown)))

    def _publish(self, fact: WorkspaceChanged) -> None:
        for channel in list(self._channels):
            try:
                channel.send_nowait(fact)
            except trio.WouldBlock:
                logger.warning("workspace: a watcher fell behind and was dropped")
                channel.close()
                self._channels.remove(channel)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._channels.remove(channel)
        if not self._channels:
            self._stop_watching_if_unheard()


def _not_a_save_in_progress(change: watchfiles.Change, path: str) -> bool:
    return not os.path.basename(path).startswith(TEMP_PREFIX)


class _answering:
    """Fails `reply` with what went wrong in the block: a `McpappsError` as it is, an `OSError`
    as a sentence, anything else (a bug of ours) logged and said as such, so a request is
    always answered and the actor lives on."""

    def __init__(self, reply: Reply[Any]) -> None:
        self._reply = reply

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: Any, error: BaseException | None, tb: Any) -> bool:
        if error is None or not isinstance(error, Exception):
            return False
        if isinstance(error, McpappsError):
            self._reply.fail(error)
        elif isinstance(error, OSError):
            self._reply.fail(FileRefused(f"the file could not be used ({error.strerror})"))
        else:
            logger.exception("workspace: a request failed", exc_info=error)
            self._reply.fail(McpappsError("the workspace failed to answer: see the log"))
        return True
