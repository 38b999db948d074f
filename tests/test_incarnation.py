"""One incarnation's death, without a process: the first cause wins and is acted on once."""

from __future__ import annotations

import trio

from actors.incarnation import ENDED, Incarnation


async def test_the_first_cause_of_death_wins() -> None:
    incarnation = Incarnation()
    assert not incarnation.died.is_set()
    assert incarnation.declare("the process exited with code 0", abnormal=False) is True
    assert incarnation.declare("the connection failed: the connection closed") is False
    assert incarnation.died.is_set()
    exit = incarnation.exit()
    assert exit.reason == "the process exited with code 0"
    assert exit.abnormal is False


async def test_a_death_is_mourned_once_and_ends_the_service() -> None:
    incarnation = Incarnation()
    async with trio.open_nursery() as nursery:
        incarnation.calls = nursery
        incarnation.declare("hung: did not answer 3 pings in a row (1 s each)")
        assert incarnation.mourn() is True
        assert incarnation.mourn() is False
        assert incarnation.calls is None
        assert incarnation.upstream is None


async def test_an_incarnation_that_never_ran_ran_for_no_time() -> None:
    incarnation = Incarnation()
    assert not incarnation.running
    exit = incarnation.exit()
    assert exit.reason == ENDED  # nothing said why
    assert exit.abnormal is True
    assert exit.ran_for == 0.0
