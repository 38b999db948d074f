"""The stdio transport: newline-delimited JSON-RPC over a child's stdin and stdout, parsed and
serialised by the SDK's own models, plus the child's stderr read line by line.

The SDK's `stdio_client` is not used because it owns the process (see
`actors/apps/processgroup.py`); this module only moves lines between the child's pipes and the SDK
session.

No task of its own sits between the session and the pipes on the way of a call: a message is
written by the task that sends it, and the session's own receive loop reads and parses the
child's answer. A relay task per direction would add two scheduling rounds to every call, which
at one caller is a visible share of what a call through the gateway costs.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
import trio
from mcp.shared.message import SessionMessage

from actors.apps.direct import DirectRequests
from actors.apps.processgroup import ChildProcess

logger = logging.getLogger("mcpapps.app")

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSON-RPC message; a runaway line must not eat memory
MAX_STDERR_LINE = 4096
READ_CHUNK = 65536

# What reading or writing a pipe raises once the child or the pipe is gone.
_PIPE_GONE = (trio.ClosedResourceError, trio.BrokenResourceError, OSError)


class LineSplitter:
    """Cuts a byte stream into lines (without the newline); a line over `limit` bytes is cut
    short and its remainder skipped. It keeps no state in a pending await, so a reader that is
    cancelled between two chunks loses nothing."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        buffer = self._buffer
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            if self._skipping:
                self._skipping = False
            else:
                lines.append(bytes(buffer[start:end]))
            start = end + 1
        del buffer[:start]
        if len(buffer) > self._limit:
            if not self._skipping:
                lines.append(bytes(buffer[: self._limit]))
            self._skipping = True
            buffer.clear()
        return lines

    def end(self) -> list[bytes]:
        """The last line, if the stream ended without a newline after it."""
        rest = [] if self._skipping or not self._buffer else [bytes(self._buffer)]
        self._buffer.clear()
        return rest


async def _lines(stream: trio.abc.ReceiveStream, limit: int) -> AsyncIterator[bytes]:
    splitter = LineSplitter(limit)
    while True:
        chunk = await stream.receive_some(READ_CHUNK)
        if not chunk:
            for line in splitter.end():
                yield line
            return
        for line in splitter.feed(chunk):
            yield line


async def pump_stderr(child: ChildProcess, on_line: Callable[[str], None]) -> None:
    with contextlib.suppress(*_PIPE_GONE):
        async for raw in _lines(child.stderr, MAX_STDERR_LINE):
            on_line(raw.decode("utf-8", "replace").rstrip("\r"))


async def _read_some(stream: trio.lowlevel.FdStream) -> bytes:
    """`stream.receive_some`, without its scheduling round before the read when the read has
    to wait anyway (an answer is read as soon as the pipe is readable, one round after the
    child wrote it). When data is there at once, this yields once, so that a child flooding
    its stdout cannot keep the other tasks from running."""
    fd = stream.fileno()
    try:
        data = os.read(fd, READ_CHUNK)
    except BlockingIOError:
        pass
    else:
        await trio.lowlevel.checkpoint()
        return data
    while True:
        await trio.lowlevel.wait_readable(fd)
        with contextlib.suppress(BlockingIOError):  # woken, and someone else read it first
            return os.read(fd, READ_CHUNK)


class _Endless:
    """What the SDK's stream protocols ask of both ends besides sending or receiving."""

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class StdoutReader(_Endless):
    """The session's read stream: the child's stdout, one JSON-RPC message a line, read by
    whoever receives (the session's receive loop)."""

    def __init__(
        self,
        child: ChildProcess,
        app_id: str,
        on_eof: Callable[[], None],
        direct: DirectRequests | None = None,
    ) -> None:
        self._stdout = child.stdout
        self._app_id = app_id
        self._on_eof = on_eof
        self._direct = direct  # answers to requests that passed by the session go there
        self._splitter = LineSplitter(MAX_LINE_BYTES)
        self._ready: list[bytes] = []  # lines read and not yet received, last first
        self._at_eof = False  # the child closed its stdout: what is left in `_ready` is all
        self._closed = False  # the pipe failed, or the session closed this end

    def close(self) -> None:
        self._closed = True
        if self._direct is not None:
            self._direct.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> SessionMessage:
        while True:
            while self._ready:
                if (message := self._parse(self._ready.pop())) is not None:
                    return message
            if self._closed:
                raise anyio.EndOfStream
            if self._at_eof:
                self.close()
                self._on_eof()
                raise anyio.EndOfStream
            try:
                chunk = await _read_some(self._stdout)
            except _PIPE_GONE:
                self.close()  # the pipe was closed under us: the session just ends
                raise anyio.EndOfStream from None
            if chunk:
                self._ready = self._splitter.feed(chunk)[::-1]
            else:
                self._ready = self._splitter.end()
                self._at_eof = True

    def _parse(self, raw: bytes) -> SessionMessage | None:
        if not raw.strip():
            return None
        try:
            message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
        except ValueError:
            # Stray prints on stdout are a common app bug; they cost one log line, never the
            # session.
            text = raw[:200].decode("utf-8", "replace")
            logger.warning("app %s wrote a line that is not JSON-RPC: %r", self._app_id, text)
            return None
        if self._direct is not None and self._direct.answer(message):
            return None
        return SessionMessage(message)


class StdinWriter(_Endless):
    """The session's write stream: each message one line on the child's stdin, written at once
    by the task that sends it when the pipe takes it whole (the usual case).

    When the pipe is full, or something sent before is still waiting for room, the message's
    remaining bytes join a queue that one writer task empties in order, and the sender waits
    for its turn to be written. Written bytes are never taken back: a sender cancelled while it
    waits leaves its line to the writer task, so the child never sees half a line followed by
    the next message. (The writer task is the whole transport when the pipe is slow; a
    sender's own write is only the case where nothing has to wait.)"""

    def __init__(self, stdin: trio.lowlevel.FdStream) -> None:
        self._stdin = stdin
        self._queue_in, self._queue = trio.open_memory_channel[tuple[bytes, trio.Event]](math.inf)
        self._waiting = 0  # lines in the queue or being written by the writer task
        self._broken = False  # a write failed: the child is gone or closed its stdin
        self._closed = False

    def close(self) -> None:
        self._closed = True
        self._queue_in.close()

    async def send(self, item: SessionMessage) -> None:
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        await self.send_line(line)

    def send_later(self, line: bytes) -> None:
        """Hand a line over without waiting: written now if the pipe takes it, else by the
        writer task in its turn; dropped if the pipe is gone."""
        if self._closed or self._broken:
            return
        if not self._waiting:
            written = self._write_now(line)
            if written is None or written == len(line):
                return
            line = line[written:]
        self._waiting += 1
        self._queue_in.send_nowait((line, trio.Event()))

    def _write_now(self, data: bytes) -> int | None:
        """What of `data` the pipe took at once, or None if the pipe is gone (then what
        comes next hears that it broke)."""
        try:
            return os.write(self._stdin.fileno(), data)
        except BlockingIOError:
            return 0
        except _PIPE_GONE:
            self._broken = True
            return None

    async def send_line(self, data: bytes) -> None:
        """Write one line (ending in a newline), in order with every other."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        if not self._waiting:
            written = self._write_now(data)
            if written is None:
                return  # lost with the child
            if written == len(data):
                # No scheduling round here: the session waits for the answer next, and a burst
                # of sends yields as soon as the pipe is full.
                return
            data = data[written:]
        done = trio.Event()
        self._waiting += 1
        self._queue_in.send_nowait((data, done))
        await done.wait()

    async def write_waiting(self) -> None:
        """The writer task: writes what senders could not write at once, in order."""
        async for data, done in self._queue:
            try:
                if not self._broken:
                    await self._stdin.send_all(data)
            except _PIPE_GONE:
                self._broken = True
            finally:
                self._waiting -= 1
                done.set()


class StdioTransport:
    """What an SDK `Client` takes as its transport (entered, the (read, write) stream pair),
    and `direct`, the requests that pass by the session on the same pipes."""

    def __init__(self, child: ChildProcess, app_id: str, on_eof: Callable[[], None]) -> None:
        self._writer = StdinWriter(child.stdin)
        self.direct = DirectRequests(self._writer.send_line, self._writer.send_later)
        self._reader = StdoutReader(child, app_id, on_eof, self.direct)
        self._entered: contextlib.AbstractAsyncContextManager[Any] | None = None

    async def __aenter__(self) -> tuple[StdoutReader, StdinWriter]:
        self._entered = self._streams()
        return await self._entered.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._entered is not None
        return await self._entered.__aexit__(exc_type, exc, tb)

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[tuple[StdoutReader, StdinWriter]]:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._writer.write_waiting)
            try:
                yield self._reader, self._writer
            finally:
                self._reader.close()  # a direct request still waiting fails as closed
                nursery.cancel_scope.cancel()
