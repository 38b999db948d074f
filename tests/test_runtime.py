"""The actor runtime's primitives on their own, without an actor: `Reply`, `Forward`,
`Mailbox` and `ask`."""

from __future__ import annotations

import logging

import attrs
import pytest
import trio

from actors.runtime import Abandonment, AskTimeout, Forward, Mailbox, Overloaded, Reply, ask


@attrs.frozen
class Fact:
    n: int


@attrs.frozen
class Question:
    reply: Reply[int]


async def test_a_reply_takes_the_first_value_and_drops_later_ones() -> None:
    reply: Reply[int] = Reply()
    reply.send(1)
    reply.send(2)  # a late second answer must not block or replace the first
    assert await reply.wait() == 1


async def test_a_failed_reply_raises_its_error_at_the_waiter() -> None:
    reply: Reply[int] = Reply()
    reply.fail(KeyError("gone"))
    with pytest.raises(KeyError, match="gone"):
        await reply.wait()


async def test_a_forward_transforms_the_value_and_passes_errors_on() -> None:
    target: Reply[str] = Reply()
    Forward(target, lambda n: f"#{n}").send(7)
    assert await target.wait() == "#7"
    failed: Reply[str] = Reply()
    Forward(failed, str).fail(ValueError("no"))
    with pytest.raises(ValueError, match="no"):
        await failed.wait()


async def test_told_messages_arrive_in_order() -> None:
    mailbox: Mailbox[Fact] = Mailbox()
    for n in range(3):
        mailbox.tell(Fact(n))
    assert mailbox.take_waiting() == [Fact(0), Fact(1), Fact(2)]
    assert mailbox.take_waiting() == []


async def test_a_request_told_to_a_full_mailbox_fails_at_once() -> None:
    mailbox: Mailbox[Question] = Mailbox(size=1)
    mailbox.tell(Question(Reply()))
    refused = Question(Reply())
    mailbox.tell(refused)
    with pytest.raises(Overloaded, match="too busy"):
        await refused.reply.wait()


async def test_a_request_told_to_a_closed_mailbox_fails_at_once() -> None:
    mailbox: Mailbox[Question] = Mailbox()
    mailbox.close()
    refused = Question(Reply())
    mailbox.tell(refused)
    with pytest.raises(Overloaded, match="stopped"):
        await refused.reply.wait()


async def test_a_fact_dropped_by_a_full_mailbox_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mailbox: Mailbox[Fact] = Mailbox(size=1)
    with caplog.at_level(logging.WARNING, logger="mcpapps.runtime"):
        mailbox.tell(Fact(1))
        mailbox.tell(Fact(2))
    assert mailbox.take_waiting() == [Fact(1)]
    assert "Fact" in caplog.text
    assert "dropped" in caplog.text


async def test_ask_returns_the_actors_answer() -> None:
    mailbox: Mailbox[Question] = Mailbox()

    async def actor() -> None:
        async for message in mailbox:
            message.reply.send(42)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
        assert await ask(mailbox, Question) == 42
        nursery.cancel_scope.cancel()


async def test_ask_gives_up_at_its_deadline() -> None:
    mailbox: Mailbox[Question] = Mailbox()  # nobody reads it
    with pytest.raises(AskTimeout, match=r"no answer within 0\.01 s"):
        await ask(mailbox, Question, timeout=0.01)


async def test_ask_of_a_stopped_actor_says_so() -> None:
    mailbox: Mailbox[Question] = Mailbox()
    mailbox.close()
    with pytest.raises(AskTimeout, match="stopped"):
        await ask(mailbox, Question)


async def test_an_abandonment_cancels_the_work_it_guards_as_it_is_set() -> None:
    abandonment = Abandonment()
    with abandonment.cancels() as scope:
        abandonment.set()
        assert scope.cancel_called  # at once, from set itself: no task waits for it
        await trio.sleep_forever()
    assert scope.cancelled_caught
    assert abandonment.is_set()
    # Work started after its caller gave up is cancelled before it begins.
    with abandonment.cancels() as late:
        await trio.sleep_forever()
    assert late.cancelled_caught


async def test_an_abandonment_set_after_the_work_ended_touches_nothing() -> None:
    abandonment = Abandonment()
    with abandonment.cancels() as scope:
        await trio.sleep(0)
    abandonment.set()
    assert not scope.cancel_called


async def test_ask_with_room_in_the_mailbox_waits_only_for_the_answer() -> None:
    """The asking task runs twice: to put the request in and, answered, to return. Every
    further scheduling round is latency on every call through an actor."""
    mailbox: Mailbox[Question] = Mailbox()
    steps: list[str] = []

    class Steps(trio.abc.Instrument):
        def before_task_step(self, task: trio.lowlevel.Task) -> None:
            if task.name.endswith("asker"):
                steps.append(task.name)

    async def actor() -> None:
        async for message in mailbox:
            message.reply.send(42)

    answers: list[int] = []

    async def asker() -> None:
        answers.append(await ask(mailbox, Question))

    trio.lowlevel.add_instrument(instrument := Steps())
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(actor)
            nursery.start_soon(asker)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    finally:
        trio.lowlevel.remove_instrument(instrument)
    assert answers == [42]
    assert len(steps) == 2


async def test_ask_of_a_full_mailbox_waits_for_room() -> None:
    mailbox: Mailbox[Question] = Mailbox(size=0)  # no room until the actor takes one
    answers: list[int] = []

    async def asker() -> None:
        answers.append(await ask(mailbox, Question))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(asker)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == []
        message = await mailbox.__aiter__().receive()
        message.reply.send(7)
    assert answers == [7]
