"""The resource-subscription table of an app actor, without a process."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from actors.changes import Changes
from actors.runtime import Mailbox
from actors.subscriptions import Subscriptions


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
