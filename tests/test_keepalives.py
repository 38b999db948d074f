"""Keep-alive comments on our event streams while a person takes their time (on Trio's virtual
clock): sent when nothing else is, so that no proxy's read timeout cuts the stream."""

from __future__ import annotations

import math

import trio

from web.keepalives import KEEP_ALIVE, KEEP_ALIVE_S, keep_alives_until, with_keep_alives


async def test_a_wait_for_the_person_sends_keep_alives_until_they_answer(
    autojump_clock: trio.abc.Clock,
) -> None:
    answered = trio.Event()
    beats: list[bytes] = []

    async def read() -> None:
        deadline = trio.current_time() + 120
        async for beat in keep_alives_until(answered, deadline):
            beats.append(beat)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.sleep(KEEP_ALIVE_S * 2.5)
        answered.set()
    assert beats == [KEEP_ALIVE, KEEP_ALIVE]


async def test_a_wait_nobody_answers_ends_at_its_deadline(autojump_clock: trio.abc.Clock) -> None:
    started = trio.current_time()
    beats = [beat async for beat in keep_alives_until(trio.Event(), started + KEEP_ALIVE_S * 3.5)]
    assert beats == [KEEP_ALIVE] * 3
    assert trio.current_time() == started + KEEP_ALIVE_S * 3.5


async def test_a_calls_events_come_with_a_keep_alive_for_each_quiet_stretch(
    autojump_clock: trio.abc.Clock,
) -> None:
    send, receive = trio.open_memory_channel[tuple[str, dict[str, int]]](math.inf)
    items: list[object] = []

    async def read() -> None:
        async for item in with_keep_alives(receive):
            items.append(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        send.send_nowait(("elicitation", {"n": 1}))
        await trio.sleep(KEEP_ALIVE_S * 1.5)  # the person reads the question
        send.send_nowait(("message", {"n": 2}))
        await send.aclose()
    assert items == [("elicitation", {"n": 1}), None, ("message", {"n": 2})]
