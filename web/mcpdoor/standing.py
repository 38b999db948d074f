"""The standing stream of an MCP session (the GET a handshake-era client holds open for what the
server sends outside any request), served without a task or a timer of its own.

The SDK's transport answers that GET with sse-starlette's `EventSourceResponse`: per stream a
task group of five tasks (the body, the writer, the disconnect watch, the exit-signal watch,
and a keep-alive that sleeps 15 s and wakes to send a ping) and two memory streams. A host with
a thousand sessions open on each of two endpoints then has 2,000 timers, 133 wake-ups a second,
and about 60 KiB per stream. Here a stream is the request's own task waiting for its client to
go, a queue of frames written by a short task that lives only while there is something to
write, and one keep-alive sweep for every stream of the process.

Only the stream's ordinary case is served here: the session is open and not expiring, the
client accepts an event stream, it has no standing stream yet, and the SDK's request checks
pass. Anything else (each refusal, which the SDK words) goes to the SDK's transport as before.
The client receives what the SDK would send: the same status and headers, each message framed
by the transport's own `_create_event_data` and sse-starlette's encoder, and the same comment
(`: ping - <time>`) after `KEEP_ALIVE_S` in which nothing was sent. The session's bookkeeping is
the transport's own: the stream is registered where its message router looks for it
(`GET_STREAM_KEY`), is closed by its clean-up (session end, `close_standalone_sse_stream`), and
holds the session's idle clock while open, as the transport does for any request.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from typing import Any

import anyio
import trio
from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.event import ensure_bytes
from starlette.requests import Request

logger = logging.getLogger("mcpapps.web")

KEEP_ALIVE_S = float(EventSourceResponse.DEFAULT_PING_INTERVAL)  # as the SDK's streams ping
_SEP = EventSourceResponse.DEFAULT_SEPARATOR


def ping() -> bytes:
    """sse-starlette's keep-alive comment, as the SDK's streams send it."""
    comment = f"ping - {datetime.now(UTC)}"
    return ensure_bytes(ServerSentEvent(comment=comment, sep=_SEP), _SEP)


class StandingStreams:
    """Every standing stream of the process, the tasks that write their frames, and the one
    keep-alive sweep. `run` must be running (in the front door's nursery) for streams to be
    served here; without it they go to the SDK."""

    def __init__(self) -> None:
        self._streams: set[Standing] = set()
        self._nursery: trio.Nursery | None = None

    def __len__(self) -> int:
        return len(self._streams)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                while True:
                    await trio.sleep(KEEP_ALIVE_S)
                    self._sweep()
            finally:
                self._nursery = None

    def _sweep(self) -> None:
        """A ping on every stream that sent nothing since the last sweep (one comment for all:
        its time is the sweep's)."""
        frame = ping()
        for stream in self._streams:
            if stream.quiet:
                stream.write(frame)
            stream.quiet = True

    async def open(
        self, manager: Any, session_id: str, scope: dict[str, Any], send: Any
    ) -> Standing | None:
        """Open a GET of session `session_id` of `manager` (the SDK's session manager) as its
        standing stream: registered with the session, its head sent through `send`. None,
        having sent nothing, if it is not the ordinary case (the caller then hands it to the
        SDK). What this returns must be held (`hold`), at once, by the request's task.

        Opening and holding are apart so that the stream is held once the frames that opened
        it have returned: a thousand idle sessions would otherwise each keep the front door's
        checks and wrappers alive for as long as they stay open."""
        nursery = self._nursery
        transport = manager._server_instances.get(session_id)
        if nursery is None or transport is None or not await _ordinary(manager, transport, scope):
            return None
        stream = Standing(transport, send, nursery)
        transport._request_streams[GET_STREAM_KEY] = (stream, stream)
        self._streams.add(stream)
        stream.hold_session()
        try:
            await send(
                {"type": "http.response.start", "status": 200, "headers": _headers(transport)}
            )
        except BaseException:
            await self._forget(stream)
            raise
        return stream

    async def hold(self, stream: Standing, receive: Any, send: Any) -> None:
        """Hold an opened `stream` until its client goes or the session closes it. Its frames
        go out through `send`, the connection's own: the head went out through the request's
        wrappers already, and they change nothing after it."""
        stream.send_through(send)
        try:
            await stream.until_gone(receive)
        finally:
            await self._forget(stream)
        await stream.end()

    async def _forget(self, stream: Standing) -> None:
        self._streams.discard(stream)
        transport = stream.transport
        registered: Any = transport._request_streams.get(GET_STREAM_KEY, (None,))[0]
        if registered is stream:
            await transport._clean_up_memory_streams(GET_STREAM_KEY)
        stream.release_session()


async def _ordinary(
    manager: Any, transport: StreamableHTTPServerTransport, scope: dict[str, Any]
) -> bool:
    """Whether the SDK would open the standing stream for this request (else it refuses it, and
    says why): the checks of the manager's and the transport's `handle_request` and of its
    `_handle_get_request`, in their order. (`Last-Event-ID` never reaches here: the endpoint
    keeps no events to replay, see handoff.py.)"""
    session_id = transport.mcp_session_id
    if session_id is None or manager._session_owners.get(session_id) is not None:
        return False  # a session opened with a credential: the SDK compares it
    idle = transport.idle_scope
    if transport.is_terminated or (idle is not None and idle.cancel_called):
        return False
    request = Request(scope)
    if await transport._security.validate_request(request, is_post=False) is not None:
        return False
    _, has_sse = check_accept_headers(request)
    return has_sse and GET_STREAM_KEY not in transport._request_streams


def _headers(transport: StreamableHTTPServerTransport) -> list[tuple[bytes, bytes]]:
    """The headers of the SDK's standing stream: its own, then what `EventSourceResponse` adds."""
    headers = [
        (b"cache-control", b"no-cache, no-transform"),
        (b"connection", b"keep-alive"),
        (b"content-type", b"text/event-stream"),
    ]
    if transport.mcp_session_id:
        headers.append((b"mcp-session-id", transport.mcp_session_id.encode()))
    headers.append((b"x-accel-buffering", b"no"))
    return headers


class Standing:
    """One standing stream, as the transport's message router sees it (the send and receive
    ends of the memory stream it would have made: `send`, `close`, `aclose`) and as the sweep
    sees it (`write`, `quiet`). What only a busy stream needs (its waiting frames, the event a
    blocked sender waits on) is made when first needed: most streams only ever wait."""

    __slots__ = (
        "_closed",
        "_frames",
        "_gone",
        "_holds",
        "_nursery",
        "_scope",
        "_send",
        "_writing",
        "_written",
        "quiet",
        "transport",
    )

    def __init__(
        self, transport: StreamableHTTPServerTransport, send: Any, nursery: trio.Nursery
    ) -> None:
        self.transport = transport
        self._send = send
        self._nursery = nursery
        self._frames: list[bytes] = []
        self._writing = False
        self._written: trio.Event | None = None  # set when the waiting frames are written out
        self._scope: trio.CancelScope | None = None  # the wait for the client, while it waits
        self._gone = False  # the client went, or a write failed: nothing more is written
        self._closed = False  # the session closed it
        self._holds = False  # it holds the session's idle clock
        self.quiet = True  # nothing was written since the last sweep (or since it opened)

    # ---- the session's idle clock --------------------------------------------------------------

    def hold_session(self) -> None:
        """An open request holds the session, as the transport's `handle_request` says."""
        transport = self.transport
        idle = transport.idle_scope
        if idle is not None and transport._idle_timeout is not None:
            self._holds = True
            transport._requests_in_flight += 1
            idle.deadline = math.inf

    def release_session(self) -> None:
        if not self._holds:
            return
        self._holds = False
        transport = self.transport
        transport._requests_in_flight -= 1
        idle, timeout = transport.idle_scope, transport._idle_timeout
        if not transport._requests_in_flight and idle is not None and timeout is not None:
            idle.deadline = trio.current_time() + timeout

    # ---- the transport's side ----------------------------------------------------------------

    async def send(self, message: EventMessage) -> None:
        """A message the session sends outside any request. Like the transport's memory
        stream, this waits once `REQUEST_STREAM_BUFFER_SIZE` frames are waiting for a slow
        client."""
        if self._gone or self._closed:
            raise anyio.ClosedResourceError
        while len(self._frames) >= REQUEST_STREAM_BUFFER_SIZE:
            await self._written_out()
            if self._gone or self._closed:
                raise anyio.ClosedResourceError
        # The transport's own framing: `event: message`, `data: <JSON-RPC>`, (`id:` with a store).
        self.write(ensure_bytes(self.transport._create_event_data(message), _SEP))

    def close(self) -> None:
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()

    async def aclose(self) -> None:
        self.close()

    # ---- the stream's own side ---------------------------------------------------------------

    def send_through(self, send: Any) -> None:
        self._send = send

    def write(self, frame: bytes) -> None:
        if self._gone:
            return
        self._frames.append(frame)
        self.quiet = False
        if not self._writing:
            self._writing = True
            self._nursery.start_soon(self._write_out)

    async def _written_out(self) -> None:
        if self._written is None:
            self._written = trio.Event()
        await self._written.wait()

    async def _write_out(self) -> None:
        try:
            while self._frames and not self._gone:
                body = b"".join(self._frames)
                self._frames.clear()
                await self._send({"type": "http.response.body", "body": body, "more_body": True})
        except Exception as error:  # the connection is gone (Hypercorn raises on a closed one)
            logger.debug("a standing stream could not be written: %r", error)
            self._gone = True
            self._frames.clear()
        finally:
            self._writing = False
            if self._written is not None:
                self._written.set()
                self._written = None

    async def until_gone(self, receive: Any) -> None:
        """Wait for the client to go (or the session to close the stream)."""
        if self._closed:
            return
        with trio.CancelScope() as self._scope:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    self._gone = True
                    return

    async def end(self) -> None:
        """Closed by the session: what is queued is written, then the response's end (which
        a cancellation does not cut short: Hypercorn finishes the connection's business in
        it, see web/intake.py's `finishing`)."""
        if self._gone:
            return
        while self._writing:
            await self._written_out()
        if not self._gone:
            end = {"type": "http.response.body", "body": b"", "more_body": False}
            with trio.CancelScope(shield=True):
                try:
                    await self._send(end)
                except Exception as error:  # the client went meanwhile
                    logger.debug("a standing stream could not be ended: %r", error)
