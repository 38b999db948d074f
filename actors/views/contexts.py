"""The model context the views attached to the chat, as the view hub holds it (its one owner):
plain data, changed only by the hub's mailbox.

Each view instance has at most one context, the latest it sent (an update replaces the one
before and gets a new `updateId`). An instance is what the person sees as the same view: in a
chat, the chat session, the app and the tool call it shows (its `toolCallId` when a chat turn
opened it, else its tool), so a view reopened after a reload of the page, a new lease, finds
the context it attached and is given it again; outside a chat, its lease, so the context goes
with the view. A context lives until the chat's next turn takes it, the person removes it, or
the view replaces it; a chat's outlives the page (it is the server's), not the process.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from actors.views.leases import Lease
from actors.views.modelcontext import for_model, host_state, is_shown

# Contexts held at once, over every chat: the oldest goes first when a new one would pass it.
MAX_CONTEXTS = 1_000
Instance = tuple[str, str, str]  # (owner: "session:<id>" | "view:<id>", app id, what it shows)


@attrs.frozen
class ModelContext:
    update_id: str
    instance: Instance
    app_id: str
    chat_session: str | None
    view_id: str  # the view that sent it (its lease may have ended since)
    blocks: tuple[Mapping[str, Any], ...]
    structured: Any
    at: float

    def host_state(self) -> dict[str, Any]:
        return host_state(self.update_id, self.blocks, self.structured)

    def for_model(self) -> dict[str, Any]:
        return for_model(self.app_id, self.blocks, self.structured)

    def chip(self) -> dict[str, Any]:
        """What the page shows of it: the blocks the person may see (none: no chip)."""
        shown = [dict(b) for b in self.blocks if is_shown(b)]
        return {
            "updateId": self.update_id,
            "appId": self.app_id,
            "sessionId": self.chat_session,
            "viewId": self.view_id,
            "content": shown,
            "hidden": len(self.blocks) - len(shown),
            "structuredContent": self.structured is not None,
        }


def instance_of(lease: Lease) -> Instance:
    if lease.chat_session is None:
        return (f"view:{lease.id}", lease.app_id, "")
    call = lease.tool_call or {}
    shown = call.get("toolCallId") or call.get("toolName") or ""
    return (f"session:{lease.chat_session}", lease.app_id, str(shown))


class ContextTable:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._by_instance: dict[Instance, ModelContext] = {}

    def __len__(self) -> int:
        return len(self._by_instance)

    def put(self, lease: Lease, blocks: tuple[Mapping[str, Any], ...], structured: Any) -> str:
        """The view's new context, replacing the one before; its new update id. An update with
        nothing in it clears the context."""
        instance = instance_of(lease)
        self._by_instance.pop(instance, None)
        update_id = f"update-{secrets.token_urlsafe(12)}"
        if not blocks and structured is None:
            return update_id
        while len(self._by_instance) >= MAX_CONTEXTS:
            oldest = min(self._by_instance.values(), key=lambda c: c.at)
            del self._by_instance[oldest.instance]
        self._by_instance[instance] = ModelContext(
            update_id,
            instance,
            lease.app_id,
            lease.chat_session,
            lease.id,
            blocks,
            structured,
            self._clock(),
        )
        return update_id

    def current(self, lease: Lease) -> ModelContext | None:
        return self._by_instance.get(instance_of(lease))

    def remove(self, update_id: str) -> ModelContext | None:
        """The person removed it (a chip): gone, and said which it was; None when it is not
        held (taken, replaced or removed already)."""
        for context in self._by_instance.values():
            if context.update_id == update_id:
                return self._by_instance.pop(context.instance)
        return None

    def listed(self, chat_session: str | None, view_ids: Iterable[str]) -> list[ModelContext]:
        """The contexts of a chat session and of the given views outside a chat, oldest first."""
        views = set(view_ids)
        return sorted(
            (
                c
                for c in self._by_instance.values()
                if (chat_session is not None and c.chat_session == chat_session)
                or (c.chat_session is None and c.view_id in views)
            ),
            key=lambda c: c.at,
        )

    def take(self, chat_session: str, update_ids: Iterable[str]) -> list[ModelContext]:
        """For a turn of `chat_session`: its contexts, and those named (views outside a chat
        the page showed beside it); each is given once."""
        named = set(update_ids)
        taken = sorted(
            (
                c
                for c in self._by_instance.values()
                if c.chat_session == chat_session
                or (c.chat_session is None and c.update_id in named)
            ),
            key=lambda c: c.at,
        )
        for context in taken:
            del self._by_instance[context.instance]
        return taken

    def view_ended(self, lease: Lease) -> None:
        """A view outside a chat takes its context with it."""
        if lease.chat_session is None:
            self._by_instance.pop(instance_of(lease), None)
