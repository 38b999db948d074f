"""What the view hub holds of its file views (actors/views/fileviews.py), changed only by the
hub's mailbox and its tasks: the workspace actor, the file each file view was opened on, and the
pages listening for their views' notifications."""

from __future__ import annotations

import attrs
import trio

from actors.catalog import Wire
from actors.files.messages import EndLease, Opened, ResourceUpdated, WorkspaceMessage
from actors.runtime import Mailbox, Recipient
from actors.views.leases import Lease


@attrs.define
class FileViews:
    """What the view hub holds of its file views: the workspace actor (None without a
    workspace), the file each file view was opened on, and the pages listening to them."""

    workspace: Mailbox[WorkspaceMessage] | None = None
    hub: Recipient[ResourceUpdated] | None = None  # where the workspace tells of updates
    opened: dict[str, Opened] = attrs.Factory(dict)  # by lease id
    listeners: dict[str, list[trio.MemorySendChannel[Wire]]] = attrs.Factory(dict)

    def listen(self, lease: Lease, channel: trio.MemorySendChannel[Wire]) -> None:
        self.listeners.setdefault(lease.id, []).append(channel)

    def updated(self, fact: ResourceUpdated) -> None:
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": fact.uri},
        }
        channels = self.listeners.get(fact.lease, [])
        for channel in list(channels):
            try:
                channel.send_nowait(notice)
            except trio.WouldBlock:
                # An update only says "read again": one that finds the page's queue full is
                # dropped, since an update already waiting says the same.
                pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                channels.remove(channel)

    def ended(self, lease: Lease) -> None:
        """The view's lease ended: its URI resolves to nothing from now on, and the pages
        listening to it are told so by the end of their stream."""
        self.opened.pop(lease.id, None)
        for channel in self.listeners.pop(lease.id, []):
            channel.close()
        if self.workspace is not None:
            self.workspace.tell(EndLease(lease.id))
