"""The stdio transport's two ends on real pipes: lines cut and parsed as the session reads
them, and messages written whole and in order even when the pipe is full."""

from __future__ import annotations

import contextlib
import json
import os

import anyio
import mcp_types as types
import trio
from mcp.shared.message import SessionMessage

from actors.apps.stdio import LineSplitter, StdinWriter, StdoutReader


def _notification(text: str) -> SessionMessage:
    return SessionMessage(
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"t": text})
    )


class _Pipes:
    """Stands in for a child process: only its stdout is read."""

    def __init__(self, stdout: trio.lowlevel.FdStream) -> None:
        self.stdout = stdout


def test_lines_are_cut_at_newlines_and_a_runaway_line_is_cut_short() -> None:
    splitter = LineSplitter(8)
    assert splitter.feed(b"ab\ncd") == [b"ab"]
    assert splitter.feed(b"e\n\nxyz") == [b"cde", b""]
    assert splitter.feed(b"0123456789") == [b"xyz012345"[:8]]
    assert splitter.feed(b"rest\nnext\n") == [b"next"]  # the runaway line's rest is skipped
    assert splitter.feed(b"tail") == []
    assert splitter.end() == [b"tail"]


async def test_the_reader_parses_each_line_skips_garbage_and_tells_the_end() -> None:
    read_fd, write_fd = os.pipe()
    ended: list[bool] = []
    stdout = trio.lowlevel.FdStream(read_fd)
    reader = StdoutReader(_Pipes(stdout), "app", lambda: ended.append(True))  # type: ignore[arg-type]
    lines = [
        _notification("one").message.model_dump_json(by_alias=True, exclude_unset=True),
        "not json at all",
        "",
        _notification("two").message.model_dump_json(by_alias=True, exclude_unset=True),
    ]
    # Two messages and some garbage in one chunk, the last line without its newline.
    os.write(write_fd, "\n".join(lines).encode())
    os.close(write_fd)
    got = [item async for item in reader]
    assert [m.message.params["t"] for m in got] == ["one", "two"]  # type: ignore[union-attr,index]
    assert ended == [True]
    with contextlib.suppress(anyio.EndOfStream):
        await reader.receive()
    assert ended == [True]  # told once
    await stdout.aclose()


async def test_a_full_pipe_keeps_every_line_whole_and_in_order() -> None:
    read_fd, write_fd = os.pipe()
    stdin = trio.lowlevel.FdStream(write_fd)
    writer = StdinWriter(stdin)
    big = "x" * 300_000  # more than a pipe holds: the sender cannot write it at once
    received = bytearray()

    async def drain() -> None:
        stream = trio.lowlevel.FdStream(read_fd)
        while chunk := await stream.receive_some(65536):
            received.extend(chunk)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(writer.write_waiting)
        with trio.move_on_after(0.2) as scope:
            # Nobody reads yet: the big line waits for room, and its sender gives up waiting.
            await writer.send(_notification(big))
        assert scope.cancelled_caught
        # Sent after it: waits behind the rest of the big line, never cuts into it.
        nursery.start_soon(drain)
        await writer.send(_notification("small"))
        writer.close()
        nursery.cancel_scope.deadline = trio.current_time() + 5
        await stdin.aclose()
    lines = bytes(received).split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line)["params"]["t"] for line in lines[:-1]] == [big, "small"]


async def test_a_closed_stdin_is_a_broken_stream_for_the_session() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # the child is gone
    stdin = trio.lowlevel.FdStream(write_fd)
    writer = StdinWriter(stdin)
    await writer.send(_notification("lost"))  # handed over, and lost with the child
    try:
        await writer.send(_notification("next"))
    except anyio.BrokenResourceError:
        pass
    else:
        raise AssertionError("a send after the pipe broke must say so")
    await stdin.aclose()
