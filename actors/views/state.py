"""What the view hub owns, in one value its mailbox and its request tasks share (nothing outside
the hub holds it): the lease table, the held calls, the apps' questions to the pages, the
counters, the approval policies, the calls running, and whether the supervisor is stopping."""

from __future__ import annotations

import attrs
import trio

from actors.messages import HubMessage, RegistryMessage
from actors.runtime import Mailbox
from actors.views.contexts import ContextTable
from actors.views.counters import ViewCounters
from actors.views.fileleases import FileViews
from actors.views.held import HeldCalls
from actors.views.leases import Lease, ViewTable
from actors.views.questions import PageQuestions
from actors.views.viewtools import ViewTools
from supervisor.model.viewsconfig import Approval


@attrs.define
class ViewState:
    registry: Mailbox[RegistryMessage]
    chats: Mailbox[HubMessage] | None  # the agent, for the apps' sampling
    table: ViewTable
    counters: ViewCounters
    approvals: dict[str, Approval] = attrs.Factory(dict)
    held: HeldCalls = attrs.Factory(HeldCalls)
    questions: PageQuestions = attrs.Factory(PageQuestions)
    contexts: ContextTable = attrs.Factory(ContextTable)  # the views' model context
    tools: ViewTools = attrs.Factory(ViewTools)  # the tools the views registered
    # The calls running (sent to their app), each with its view's lease: a reload that ends
    # the view, or the apps' stop, cancels them.
    running: dict[trio.CancelScope, Lease] = attrs.Factory(dict)
    closing: bool = False  # the apps are stopped: a call still running is cut short
    files: FileViews = attrs.Factory(FileViews)  # the file views (actors/views/fileviews.py)

    @property
    def stopping(self) -> bool:
        """The supervisor is shutting down: no call is held for approval or started."""
        return self.held.stopping

    def approval(self, app_id: str) -> Approval:
        return self.approvals.get(app_id, "writes")
