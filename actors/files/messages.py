"""What the workspace actor's mailbox takes (`WorkspaceMessage`), and the facts it tells.

A view is named by its lease id (the view door's): every request about a host resource carries
it, and a URI resolves only for the lease it was minted for. Answers to `ReadResource` and
`WriteResource` are the JSON-RPC results as the view receives them, so the view door passes
them on as they are. Nothing here loads the SDK or a web framework."""

from __future__ import annotations

from typing import Literal

import attrs
import trio

from actors.catalog import Wire
from actors.files.workspace import Listing, Representation
from actors.runtime import Recipient, Reply

# Facts the workspace actor tells.


@attrs.frozen
class ResourceUpdated:
    """The file behind `uri` changed on disk (a save through the host, or any other program):
    the view door sends the view `notifications/resources/updated` with this `uri`."""

    lease: str
    uri: str


@attrs.frozen
class WorkspaceChanged:
    """Files or folders of the workspace changed; `paths` are relative to the root (a Files
    pane reloads the folders they are in)."""

    paths: tuple[str, ...]


# Requests to the workspace actor.


@attrs.frozen
class Opened:
    """A file opened for a view: what its tool and view are given (`name`, `uri`) and what
    only the host and the app's server may know (`path`, the absolute path, which a file
    view's tool calls to its own app carry in `_meta["openai/resource"].path`)."""

    uri: str
    name: str
    path: str
    relative: str

    def file_input(self) -> Wire:
        """The viewer tool's arguments: `{"file": {"name", "resourceUri"}}`."""
        return {"file": {"name": self.name, "resourceUri": self.uri}}


@attrs.frozen
class OpenFile:
    """Mint (or find) the URI of the file `path` (relative to the root, or absolute inside
    it) for the view `lease`. Fails with a `FileRefused` that says why."""

    lease: str
    path: str
    reply: Reply[Opened]


@attrs.frozen
class ReadResource:
    """`resources/read` of a host resource: `{"contents": [{uri, mimeType, text | blob,
    _meta: {"openai/resource": {etag, writable}}}]}`."""

    lease: str
    uri: str
    representation: Representation | None
    reply: Reply[Wire]


@attrs.frozen
class WriteResource:
    """`openai/resources/write`: `{"outcome": "saved", etag}` | `{"outcome": "conflict", etag}`
    | `{"outcome": "too-large", maxBytes}`, or a `FileRefused` (another URI, a file not read
    as writable, a read-only workspace, an ended view)."""

    lease: str
    uri: str
    text: str | None
    blob: str | None
    if_match: str | None
    reply: Reply[Wire]


@attrs.frozen
class Subscribe:
    """`resources/subscribe`: tell `to` a `ResourceUpdated` whenever the file changes, until
    `Unsubscribe` or the lease ends."""

    lease: str
    uri: str
    to: Recipient[ResourceUpdated]
    reply: Reply[None]


@attrs.frozen
class Unsubscribe:
    lease: str
    uri: str
    to: Recipient[ResourceUpdated]
    reply: Reply[None]


@attrs.frozen
class EndLease:
    """The view `lease` has ended: its URIs resolve to nothing from now on."""

    lease: str


@attrs.frozen
class ListFolder:
    """The folder `path` (relative to the root; '' the root), folders first, hidden names
    left out."""

    path: str
    reply: Reply[Listing]


@attrs.frozen
class WatchWorkspace:
    """Send `channel` a `WorkspaceChanged` for every batch of changes (a live Files pane),
    until it is closed; answered once the watcher is live. A watcher that falls behind is
    dropped (its channel closed), never waited for: it reconnects and lists afresh, rather than
    show a folder as it no longer is."""

    channel: trio.MemorySendChannel[WorkspaceChanged]
    reply: Reply[None]


SaveOutcome = Literal["saved", "conflict", "too-large", "refused"]

# What the workspace actor's mailbox takes.
WorkspaceMessage = (
    OpenFile
    | ReadResource
    | WriteResource
    | Subscribe
    | Unsubscribe
    | EndLease
    | ListFolder
    | WatchWorkspace
)
