"""Keep-alive comments on our event streams (a chat turn, a view's call held for the person):
sent when nothing else was for `KEEP_ALIVE_S`, since a person may take minutes and a reverse
proxy's read timeout (nginx's default: 60 s) would cut a quiet stream."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TypeVar

import trio

KEEP_ALIVE_S = 15.0
KEEP_ALIVE = b": keep-alive\n\n"

Item = TypeVar("Item")


async def with_keep_alives(
    events: trio.MemoryReceiveChannel[Item],
) -> AsyncGenerator[Item | None]:
    """A stream's events as they come, and None each time none came for `KEEP_ALIVE_S` (the
    stream sends `KEEP_ALIVE` then)."""
    while True:
        with trio.move_on_after(KEEP_ALIVE_S) as quiet:
            try:
                item = await events.receive()
            except trio.EndOfChannel:
                return
        yield None if quiet.cancelled_caught else item


async def keep_alives_until(event: trio.Event, deadline: float) -> AsyncGenerator[bytes]:
    """`KEEP_ALIVE` every `KEEP_ALIVE_S` until `event` is set or `deadline` has passed."""
    while not event.is_set() and trio.current_time() < deadline:
        with trio.move_on_at(min(deadline, trio.current_time() + KEEP_ALIVE_S)):
            await event.wait()
        if not event.is_set() and trio.current_time() < deadline:
            yield KEEP_ALIVE
