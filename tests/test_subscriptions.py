"""The resource-subscription table of an app actor, without a process; and how an app actor
hands it to the actor of the app's new definition (a reload), also without a process."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import trio

from actors.apps.app import AppActor
from actors.apps.changes import Changes
from actors.apps.subscriptions import Subscriptions
from actors.messages import (
    AppMessage,
    GetStatus,
    HandOver,
    Inherit,
    ReleaseSubscriptions,
    SessionSnapshot,
)
from actors.runtime import Mailbox, ask
from supervisor.model.config import config_from_data
from supervisor.model.discovery import discover
from tests.support.helpers import Project
from tests.support.running import GUARD_S, config_data, environment, fixture_manifest


def test_the_app_hears_the_first_subscribe_and_the_last_unsubscribe() -> None:
    table = Subscriptions()
    assert table.add("r://1", "a") is True
    assert table.add("r://1", "b") is False
    assert table.remove("r://1", "a") is False
    assert table.is_wanted("r://1")
    assert table.remove("r://1", "b") is True
    assert not table.is_wanted("r://1")


def test_one_client_cannot_end_anothers_subscription() -> None:
    table = Subscriptions()
    table.add("r://1", "a")
    assert table.remove("r://1", "b") is False
    assert table.holds("r://1", "a")
    assert table.remove("r://never", "a") is False


def test_a_client_that_goes_releases_only_what_nobody_else_wants() -> None:
    table = Subscriptions()
    table.add("r://1", "a")
    table.add("r://2", "a")
    table.add("r://2", "b")
    assert table.release("a") == ["r://1"]
    assert list(table) == ["r://2"]
    assert table.release("a") == []


def test_listed_in_a_stable_order() -> None:
    table = Subscriptions()
    for uri in ("r://b", "r://a", "r://c"):
        table.add(uri, "x")
    assert list(table) == ["r://a", "r://b", "r://c"]


async def test_an_update_names_the_clients_the_actor_holds_as_subscribers() -> None:
    table = Subscriptions()
    table.add("r://1", "client-a")
    table.add("r://1", "client-b")
    table.add("r://2", "client-c")
    events: Mailbox[Any] = Mailbox()
    changes = Changes("fx", events, lambda catalog: None, table.owners)
    changes.resource_updated("r://1")
    await changes.on_message(
        types.ResourceUpdatedNotification(
            params=types.ResourceUpdatedNotificationParams(uri="r://2")
        )
    )
    await changes.on_message(
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="info", data="hello")
        )
    )
    told = events.take_waiting()
    assert [(n.method, n.subscribers) for n in told] == [
        ("notifications/resources/updated", frozenset({"client-a", "client-b"})),
        ("notifications/resources/updated", frozenset({"client-c"})),
        ("notifications/message", frozenset()),  # not a resource's: for every client
    ]


def test_the_table_as_a_value_and_a_resource_forgotten() -> None:
    table = Subscriptions()
    table.add("r://b", "x")
    table.add("r://a", "x")
    table.add("r://a", "y")
    assert table.items() == (("r://a", frozenset({"x", "y"})), ("r://b", frozenset({"x"})))
    assert table.forget("r://a") == frozenset({"x", "y"})
    assert table.forget("r://a") == frozenset()
    assert list(table) == ["r://b"]


async def test_a_replaced_actor_hands_its_session_over_and_passes_on_later_releases(
    project: Project,
) -> None:
    """The old actor tells its successor what the clients asked (`Inherit`); a client that goes
    after that is released from the successor's table, where its subscriptions now are. (Two
    actors of one definition, never started: no process is needed for the session's state.)"""
    project.manifest("apps/sub", fixture_manifest("sub"))
    env = environment()
    config = config_from_data(config_data(), project.config_path, env)
    [app] = discover(config, env).apps
    assert app.definition is not None
    old, new = (AppActor(app.definition, events=Mailbox(), environ=env) for _ in range(2))
    witness: Mailbox[AppMessage] = Mailbox()
    asked = SessionSnapshot(
        "debug", (("r://1", frozenset({"a", "b"})), ("r://2", frozenset({"a"})))
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(old.run)
        await nursery.start(new.run)
        old.mailbox.tell(Inherit(asked))
        await ask(old.mailbox, lambda reply: HandOver(new.mailbox, reply), GUARD_S)
        old.mailbox.tell(ReleaseSubscriptions("a"))
        await ask(old.mailbox, GetStatus, GUARD_S)  # the release has been passed on
        await ask(new.mailbox, lambda reply: HandOver(witness, reply), GUARD_S)
        assert witness.take_waiting() == [
            Inherit(SessionSnapshot("debug", (("r://1", frozenset({"b"})),)))
        ]
        nursery.cancel_scope.cancel()
