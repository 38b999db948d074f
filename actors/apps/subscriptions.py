"""Who is subscribed to which of an app's resources, as a pure reference-count table: the app
hears the first subscribe of a resource and the last unsubscribe, and one client cannot end
another's subscription. Kept across restarts, so a new session can be given them again, and
handed as a value (`items`) to the actor of an app's new definition."""

from __future__ import annotations

from collections.abc import Iterator


class Subscriptions:
    def __init__(self) -> None:
        self._owners: dict[str, set[str]] = {}  # resource uri → the clients (owners)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._owners))

    def is_wanted(self, uri: str) -> bool:
        return bool(self._owners.get(uri))

    def owners(self, uri: str) -> frozenset[str]:
        """The clients subscribed to `uri`."""
        return frozenset(self._owners.get(uri, ()))

    def holds(self, uri: str, owner: str) -> bool:
        return owner in self._owners.get(uri, ())

    def add(self, uri: str, owner: str) -> bool:
        """`owner` subscribes to `uri`; True if nobody was subscribed before (the app must be
        asked)."""
        owners = self._owners.setdefault(uri, set())
        first = not owners
        owners.add(owner)
        return first

    def remove(self, uri: str, owner: str) -> bool:
        """`owner` unsubscribes from `uri`; True if it was the last one (the app must be told).
        Not subscribed: nothing changes, False."""
        owners = self._owners.get(uri)
        if owners is None or owner not in owners:
            return False
        owners.discard(owner)
        if owners:
            return False
        del self._owners[uri]
        return True

    def items(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """Every subscribed resource with its clients, in a stable order."""
        return tuple((uri, frozenset(self._owners[uri])) for uri in self)

    def forget(self, uri: str) -> frozenset[str]:
        """Nobody is subscribed to `uri` any more (the app refused it); who was."""
        return frozenset(self._owners.pop(uri, ()))

    def release(self, owner: str) -> list[str]:
        """`owner` is gone: its subscriptions end. The resources nobody wants any more."""
        return [uri for uri in list(self._owners) if self.remove(uri, owner)]
