"""File views at the view door: a view opened on a workspace file, and the requests the host
answers for it itself. The view hub runs these; the workspace actor (actors/files/actor.py) does
the file work.

A file view is opened on one file (`OpenFileView`): the workspace actor mints that file's
`host-resource://` URI for the view's lease, and the viewer tool is called with `{"file":
{"name", "resourceUri"}}`, the call the person asked for by opening the file (it runs once
without approval, as any view's opening call does). A refused open (outside the root, not a
file, too large) ends the new lease at once: the app is never called.

The view's requests that name a host resource (`resources/read`, `resources/subscribe` and
`unsubscribe`, `openai/resources/write`) and `openai/files/open` are answered here and never
reach the app's server: the app has no such URIs. A save is a write, held for the person under
the app's view `approval` policy as a tool call that writes is (allowed once, or while the view
is open). A file view's `tools/call` to its own app carries `_meta["openai/resource"].path`,
the file's absolute path, set here and only here: what any view puts there is taken out.

Updates of a subscribed file come to the hub's mailbox as `ResourceUpdated` and go to the page
that listens for its view (`ListenToView`) as `notifications/resources/updated`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from actors.catalog import Wire
from actors.files.confine import FileRefused, NoSuchFile
from actors.files.messages import (
    Opened,
    OpenFile,
    ReadResource,
    Subscribe,
    Unsubscribe,
    WorkspaceMessage,
    WriteResource,
)
from actors.files.requests import (
    OPEN_METHOD,
    WRITE_METHOD,
    BadFileRequest,
    is_host_resource,
    open_path,
    representation,
    resource_uri,
    with_resource_path,
    write_params,
)
from actors.files.resources import UnknownResource
from actors.files.workspace import RESOURCE_META
from actors.messages import ActorOf
from actors.runtime import ASK_TIMEOUT_S, Mailbox, ask
from actors.views import held as holding
from actors.views.calls import LeaseHold, serve
from actors.views.fileleases import FileViews
from actors.views.gate import needs_approval
from actors.views.held import ENDED, STOPPING, TIMEOUT, Held
from actors.views.leases import Lease
from actors.views.messages import (
    Answered,
    ApprovalAsked,
    Failed,
    OpenedView,
    OpenFileView,
    Outcome,
    Succeeded,
    ViewRequest,
)
from actors.views.refusals import (
    BadParams,
    CallLost,
    Denied,
    FileNotServed,
    FileRequestRefused,
    NotRun,
    UnknownView,
    ViewRefusal,
)
from actors.views.state import ViewState
from supervisor.model.errors import ActorUnavailable

logger = logging.getLogger("mcpapps.views")

# A save under the "writes" approval policy is a write, as a tool without `readOnlyHint` is.
SAVE = {"name": WRITE_METHOD, "annotations": {"readOnlyHint": False}}
NO_WORKSPACE = 'no workspace is set: add a [workspace] table with root = "<folder>" to config.toml'


def refusal(error: FileRefused) -> ViewRefusal:
    """A `FileRefused` of the workspace as the view is told it, with its error code."""
    if isinstance(error, BadFileRequest):
        return BadParams(str(error))
    if isinstance(error, (UnknownResource, NoSuchFile)):
        return FileNotServed(str(error))
    return FileRequestRefused(str(error))


def door(
    files: FileViews, method: str, params: Mapping[str, Any]
) -> Callable[[ViewState, Lease, ViewRequest], Awaitable[None]] | None:
    """Who serves this request, when not the view hub's usual way: the host's own file
    requests here, and every `tools/call` amended first."""
    if method == "tools/call":
        return serve_tool_call
    # Without a workspace too: a host resource is never the app's to read (refused here).
    if method == OPEN_METHOD or is_host_resource(method, params):
        return serve_file_request
    return None


async def open_file_view(state: ViewState, message: OpenFileView) -> None:
    """A new lease for the viewer's app, its file's URI minted for it, and the opening call
    (the viewer tool with the file) allowed once; or the reason not, and no lease left."""
    files, reply = state.files, message.reply
    if files.workspace is None:
        reply.fail(FileRefused(NO_WORKSPACE))
        return
    app_id = message.app_id
    try:
        actor: int | None = await ask(state.registry, lambda r: ActorOf(app_id, r), ASK_TIMEOUT_S)
        lease = state.table.open(app_id, message.chat_session, None)
    except Exception as error:  # UnknownApp, TooManyViews, the registry's silence
        reply.fail(error)
        return
    lease.actor = actor
    workspace = files.workspace
    try:
        opened: Opened = await ask(
            workspace, lambda r: OpenFile(lease.id, message.path, r), ASK_TIMEOUT_S
        )
        if lease.ended is not None:
            raise UnknownView(f"the view ended ({lease.ended}) while its file was being opened")
    except Exception as error:
        state.table.close(lease.id, "its file could not be opened")
        reply.fail(error)  # a FileRefused as it is: the route says it over HTTP
        return
    files.opened[lease.id] = opened
    arguments = opened.file_input()
    lease.tool_call = {
        "toolName": message.tool,
        "publicName": message.public_name,
        "arguments": arguments,
        "file": opened.relative,
    }
    lease.opening = {"name": message.tool, "arguments": arguments}
    logger.info(
        "view %s… of app %s opened on %s with %s",
        lease.id[:6],
        app_id,
        opened.relative,
        message.public_name,
    )
    reply.send(
        OpenedView(
            lease.id,
            app_id,
            lease.chat_session,
            lease.tool_call,
            state.table.config.lease_s,
            state.approval(app_id),
        )
    )


async def serve_tool_call(state: ViewState, lease: Lease, request: ViewRequest) -> None:
    """A view's `tools/call`, on its usual way, with `_meta["openai/resource"]` as the host
    says: the file's absolute path for a file view, nothing for any other view."""
    opened = state.files.opened.get(lease.id)
    params: Mapping[str, Any] = request.params
    if opened is not None:
        params = with_resource_path(params, opened.path)
    elif isinstance(meta := params.get("_meta"), Mapping) and RESOURCE_META in meta:
        params = {**params, "_meta": {k: v for k, v in meta.items() if k != RESOURCE_META}}
    await serve(state, lease, attrs.evolve(request, params=params))


async def serve_file_request(state: ViewState, lease: Lease, request: ViewRequest) -> None:
    """Answer one of the host's file requests on its channel, then give back what it held."""
    door = _FileRequest(state, lease, request.events)
    outcome: Outcome | None = None
    async with request.events:
        try:
            with request.abandoned.cancels():
                outcome = await door.outcome(request.method, request.params)
        except Exception as error:  # a bug ends this request, never the hub
            logger.exception(
                "view %s… of app %s: a file request failed", lease.id[:6], lease.app_id
            )
            outcome = Failed(CallLost(f"internal error in mcpapps: {error!r}; see the log"))
        finally:
            door.give_back()
        if outcome is not None:  # else the page went away
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await request.events.send(Answered(outcome))


class _FileRequest(LeaseHold):
    """One file request, answered by the host; a save waits for the person among the held
    calls."""

    async def outcome(self, method: str, params: Mapping[str, Any]) -> Outcome:
        state, lease = self._state, self._lease
        try:
            if state.files.workspace is None:
                raise FileRequestRefused(NO_WORKSPACE)
            return Succeeded(await self._answer(method, params, state.files.workspace))
        except FileRefused as error:
            refused = refusal(error)
        except ViewRefusal as error:
            refused = error
        except ActorUnavailable as error:  # the workspace actor did not answer in time
            return Failed(error)
        state.counters.refused(lease.app_id, refused)
        return Failed(refused)

    async def _answer(
        self, method: str, params: Mapping[str, Any], workspace: Mailbox[WorkspaceMessage]
    ) -> Wire:
        lease_id = self._lease.id
        if method == OPEN_METHOD:
            return await self._open(open_path(params), workspace)
        if method == WRITE_METHOD:
            w = write_params(params)
            await self._allowed_to_save(w.uri)
            result: Wire = await ask(
                workspace,
                lambda r: WriteResource(lease_id, w.uri, w.text, w.blob, w.if_match, r),
                ASK_TIMEOUT_S,
            )
            return result
        uri = resource_uri(params)
        if method == "resources/read":
            wanted = representation(params)
            read: Wire = await ask(
                workspace, lambda r: ReadResource(lease_id, uri, wanted, r), ASK_TIMEOUT_S
            )
            return read
        hub = self._state.files.hub
        assert hub is not None
        change = Subscribe if method == "resources/subscribe" else Unsubscribe
        await ask(workspace, lambda r: change(lease_id, uri, hub, r), ASK_TIMEOUT_S)
        return {}

    async def _open(self, path: str, workspace: Mailbox[WorkspaceMessage]) -> Wire:
        """`openai/files/open`: the path checked (inside the root, a regular file) by opening
        it for this view; the page then opens it in its viewer. The view is told nothing
        more; the page reads `_meta["mcpapps/file"]`, the path from the root, and takes it
        out before the answer reaches the view."""
        lease_id = self._lease.id
        opened: Opened = await ask(workspace, lambda r: OpenFile(lease_id, path, r), ASK_TIMEOUT_S)
        return {"_meta": {"mcpapps/file": opened.relative}}

    async def _allowed_to_save(self, uri: str) -> None:
        """A save waits for the person when the app's approval policy holds writes (allowed
        once, or while the view is open); refused if they deny it or do not answer."""
        state, lease = self._state, self._lease
        if not needs_approval(state.approval(lease.app_id), SAVE) or WRITE_METHOD in lease.grants:
            if state.stopping:
                raise NotRun("the supervisor is stopping: the file was not saved")
            return
        opened = state.files.opened.get(lease.id)
        state.table.hold(lease)
        self._holds = "held"
        timeout = state.table.config.approval_timeout_s
        held = Held(lease, WRITE_METHOD)
        state.held.hold(held)
        try:
            shown = {"file": opened.relative if opened else uri}
            await self._events.send(
                ApprovalAsked(held.id, lease.app_id, WRITE_METHOD, shown, timeout)
            )
            decision = await holding.decision(held, state.table, timeout)
        finally:
            state.held.let_go(held)
        if decision not in (STOPPING, ENDED):
            state.counters.decided(lease.app_id, decision)
        if decision in ("once", "while-open") and lease.ended is not None:
            decision, held.why = ENDED, lease.ended
        if decision in ("once", "while-open"):
            if decision == "while-open":
                lease.grants.add(WRITE_METHOD)
            state.table.unhold(lease, run=True)
            self._holds = "slot"
            return
        if decision == STOPPING:
            raise NotRun("the supervisor is stopping: the file was not saved")
        if decision == ENDED:
            raise UnknownView(f"the view ended ({held.why}): the file was not saved")
        why = f"no answer within {timeout:g} s" if decision == TIMEOUT else "the person denied it"
        raise Denied(f"the file was not saved: {why}")
