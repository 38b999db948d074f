"""Host resources: the opaque `host-resource://<id>` URIs a file view is given instead of a path,
as a pure table (the workspace actor is its one owner).

A URI is minted per (lease, file): the same view opening the same file again gets the same URI,
another view gets another. Its id is 128 random bits in lowercase hex and carries nothing about
the file (no path, folder or name: the name travels beside it, in `file.name`), so a view cannot
learn where a file lives from its URI, nor guess another's. Hex, because the id sits where a URI
has its host, which some parsers lower-case: a case-sensitive id would not survive them.

A URI resolves only for the lease it was minted for, and only while that lease lives: when a
view's lease ends, its URIs and their subscriptions go with it. A URI presented by another
lease resolves to nothing, exactly like one that was never minted, so a view learns nothing
by trying.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from actors.files.confine import FileRefused
from actors.runtime import Recipient

SCHEME = "host-resource://"


class UnknownResource(FileRefused):
    """The URI is not one this view was given, or its view has ended."""


@attrs.define
class HostResource:
    uri: str
    lease: str
    path: Path  # the real, absolute path (never shown to a view)
    relative: str  # from the workspace root, for logs and the person
    name: str
    read_writable: bool = False  # the last read said `writable: true` (a save needs that)
    # Who hears of its changes (`ResourceUpdated`): the view door's recipient for the view.
    subscribers: set[Recipient[Any]] = attrs.Factory(set)


def new_id() -> str:
    return secrets.token_hex(16)


class ResourceTable:
    def __init__(self, new_id: Callable[[], str] = new_id) -> None:
        self._new_id = new_id
        self._by_uri: dict[str, HostResource] = {}
        self._by_lease_path: dict[tuple[str, Path], HostResource] = {}

    def mint(self, lease: str, path: Path, relative: str, name: str) -> HostResource:
        """The URI of `path` for `lease`: the one it already has, or a new one."""
        if (known := self._by_lease_path.get((lease, path))) is not None:
            return known
        uri = SCHEME + self._new_id()
        while uri in self._by_uri:  # 128 random bits never collide, but a test's ids might
            uri = SCHEME + self._new_id()
        resource = HostResource(uri, lease, path, relative, name)
        self._by_uri[uri] = resource
        self._by_lease_path[lease, path] = resource
        return resource

    def resolve(self, lease: str, uri: str) -> HostResource:
        """The resource `uri` names for `lease`, or `UnknownResource`."""
        resource = self._by_uri.get(uri)
        if resource is None or resource.lease != lease:
            raise UnknownResource(
                f"'{uri}' is not a file this view opened (or its view has ended):"
                " only the resourceUri the view was given can be read or saved"
            )
        return resource

    def end_lease(self, lease: str) -> list[HostResource]:
        """Forget every URI of `lease` (and their subscriptions); returns them."""
        gone = [r for r in self._by_uri.values() if r.lease == lease]
        for resource in gone:
            del self._by_uri[resource.uri]
            del self._by_lease_path[lease, resource.path]
        return gone

    def at(self, path: Path) -> Iterator[HostResource]:
        """The resources, of every lease, of the file at `path`."""
        return (r for r in self._by_uri.values() if r.path == path)

    def subscribed(self) -> bool:
        """Whether any resource has a subscriber (the watcher runs only then)."""
        return any(r.subscribers for r in self._by_uri.values())

    def __len__(self) -> int:
        return len(self._by_uri)
