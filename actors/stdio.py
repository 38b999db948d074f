"""The stdio transport: newline-delimited JSON-RPC over a child's stdin and stdout, parsed and
serialised by the SDK's own models, plus the child's stderr read line by line.

The SDK's `stdio_client` is not used because it owns the process (see `actors/process.py`); this
module only moves lines between the child's pipes and the SDK session's streams.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import anyio
import mcp_types as types
import trio
from mcp.shared.message import SessionMessage

from actors.process import ChildProcess

logger = logging.getLogger("mcpapps.app")

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSON-RPC message; a runaway line must not eat memory
MAX_STDERR_LINE = 4096


async def _lines(stream: trio.abc.ReceiveStream, limit: int) -> AsyncIterator[bytes]:
    """Yield complete lines (without the newline); a line over `limit` bytes is cut short and
    its remainder skipped."""
    buffer = bytearray()
    skipping = False
    while True:
        chunk = await stream.receive_some(65536)
        if not chunk:
            if buffer and not skipping:
                yield bytes(buffer)
            return
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            if skipping:
                skipping = False
                continue
            yield line
        if len(buffer) > limit:
            if not skipping:
                yield bytes(buffer[:limit])
            skipping = True
            buffer.clear()


async def pump_stderr(child: ChildProcess, on_line: Callable[[str], None]) -> None:
    with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError, OSError):
        async for raw in _lines(child.stderr, MAX_STDERR_LINE):
            on_line(raw.decode("utf-8", "replace").rstrip("\r"))


@contextlib.asynccontextmanager
async def stdio_streams(
    child: ChildProcess, app_id: str, on_eof: Callable[[], None]
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream, anyio.abc.ObjectSendStream]]:
    """The (read, write) stream pair an SDK `Client` takes as a transport."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def from_stdout() -> None:
        async with read_writer:
            with contextlib.suppress(
                trio.ClosedResourceError,
                trio.BrokenResourceError,
                anyio.BrokenResourceError,
                OSError,
            ):
                async for raw in _lines(child.stdout, MAX_LINE_BYTES):
                    if not raw.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
                    except ValueError:
                        # Stray prints on stdout are a common app bug; they cost one log line,
                        # never the session.
                        text = raw[:200].decode("utf-8", "replace")
                        logger.warning("app %s wrote a line that is not JSON-RPC: %r", app_id, text)
                        continue
                    await read_writer.send(SessionMessage(message))
                on_eof()

    async def to_stdin() -> None:
        with contextlib.suppress(
            trio.ClosedResourceError, trio.BrokenResourceError, anyio.ClosedResourceError, OSError
        ):
            async with write_reader:
                async for item in write_reader:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await child.stdin.send_all(data.encode() + b"\n")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(from_stdout)
        nursery.start_soon(to_stdin)
        try:
            yield read_stream, write_stream
        finally:
            nursery.cancel_scope.cancel()
