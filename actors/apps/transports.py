"""How an app is connected, one connect per transport: the model's `TransportSpec` (its names,
its rules) is completed here by the function that opens it for one incarnation. The incarnation
looks its app's transport up in `CONNECTS`; nothing else in the actors knows which transports
exist, and this module refuses to load if a transport of the model has no connect.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from actors.apps.child import StderrTail, stdio_child
from actors.apps.direct import DirectRequests
from actors.apps.httpclients import http_transport, sse_transport
from actors.apps.reaper import Reaper
from actors.apps.upstream import error_text
from supervisor.model.envrefs import expand
from supervisor.model.errors import UpstreamLost
from supervisor.model.manifest import AppDefinition
from supervisor.model.transports import TRANSPORTS

if TYPE_CHECKING:  # it imports this module: it opens the transport
    from actors.apps.incarnation import Incarnation, StartTask


@attrs.frozen
class Link:
    """What the SDK client runs over: `transport`, which the client enters for its (read,
    write) streams; and for a stdio app, `direct`, the requests that pass by the session on
    the same pipes (actors/apps/direct.py)."""

    transport: Any
    direct: DirectRequests | None = None


@attrs.frozen
class Wiring:
    """What opening a transport may need of the incarnation it is opened for: `start_task`
    runs a watcher as the incarnation's task, `on_failure` is told of an error of the session
    before a (possibly slow) teardown, `linger` runs a task that may outlive the incarnation
    (the app actor's)."""

    definition: AppDefinition
    environ: Mapping[str, str]
    incarnation: Incarnation
    tail: StderrTail
    reaper: Reaper | None
    start_task: StartTask
    on_failure: Callable[[BaseException], None]
    linger: Callable[[Callable[[], Awaitable[None]]], None] | None = None
    auth: Any = None  # an app that signs in: its OAuth client, the HTTP client's auth


Connect = Callable[[Wiring], contextlib.AbstractAsyncContextManager[Link]]


@contextlib.asynccontextmanager
async def _stdio(w: Wiring) -> AsyncIterator[Link]:
    """The app's process, with the supervisor's environment plus the manifest's."""
    manifest = w.definition.manifest
    assert manifest.command is not None  # the manifest's rules require it
    env = dict(w.environ)
    env.update({k: expand(v, w.environ) for k, v in manifest.environment.items()})
    async with stdio_child(
        w.incarnation,
        app_id=w.definition.id,
        command=[manifest.command, *manifest.arguments],
        env=env,
        cwd=manifest.working_directory,
        stop_grace_s=w.definition.supervision.stop_grace_s,
        tail=w.tail,
        reaper=w.reaper,
        start_task=w.start_task,
        on_failure=w.on_failure,
        linger=w.linger,
    ) as transport:
        yield Link(transport, transport.direct)


def _at_url(open_: Callable[..., Any], *, stream_is_connection: bool = False) -> Connect:
    """A transport that reaches the app at its URL with its headers (references expanded only
    now, so that definitions and listings never hold the secrets). `stream_is_connection`: the
    transport's one stream from the app is the connection, and its end the app's death."""

    @contextlib.asynccontextmanager
    async def connect(w: Wiring) -> AsyncIterator[Link]:
        manifest = w.definition.manifest
        assert manifest.url is not None  # the manifest's rules require it
        headers = {k: expand(v, w.environ) for k, v in manifest.headers.items()}
        timeout = manifest.request_timeout_seconds
        transport = open_(manifest.url, headers, timeout, auth=w.auth)
        if stream_is_connection:
            transport = _dies_with_its_stream(transport, w.on_failure)
        yield Link(transport)

    return connect


@contextlib.asynccontextmanager
async def _dies_with_its_stream(
    transport: Any, on_failure: Callable[[BaseException], None]
) -> AsyncIterator[Any]:
    """HTTP+SSE carries everything the app sends on one GET stream: when that stream ends (the
    server went away or dropped it), nothing more can be answered, so the death is declared at
    once, as a stdio app's exit is, and not at the next ping or call."""
    async with transport as (read, write):
        yield _EndWatch(read, on_failure), write


class _EndWatch:
    """The SDK's read stream, passed through; its end (or the transport's error just before
    it) reported to `on_failure`. The session's own teardown cancels its reader instead of
    reaching the end, so only a stream that ended by itself is reported."""

    def __init__(self, stream: Any, on_failure: Callable[[BaseException], None]) -> None:
        self._stream = stream
        self._on_failure = on_failure
        self._error: Exception | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # `last_context`, the sender's context vars

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except StopAsyncIteration:
            self._ended()
            raise
        if isinstance(item, Exception):
            self._error = item  # the SDK passes the reader's error on, then ends the stream
        return item

    async def receive(self) -> Any:
        return await self.__anext__()

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _EndWatch:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._stream.__aexit__(*exc_info)
        return result

    def _ended(self) -> None:
        why = "the app's event stream ended"
        if self._error is not None:
            why += f": {error_text(self._error)}"
        self._on_failure(UpstreamLost(why))


CONNECTS: Mapping[str, Connect] = {
    "stdio": _stdio,
    "http": _at_url(http_transport),
    "sse": _at_url(sse_transport, stream_is_connection=True),
}

if CONNECTS.keys() != TRANSPORTS.keys():
    raise ImportError(
        f"actors/apps/transports.py: the transports {sorted(TRANSPORTS)} need a connect each;"
        f" there are connects for {sorted(CONNECTS)}"
    )
