"""What the two MCP endpoints (`/apps/mcp/<appId>` and `/mcp`) share: turning a client's request
into the app-neutral params an app actor forwards, reaching the client back (sampling,
elicitation, progress), the errors a client reads, and the clients that notifications reach.

The endpoints are the SDK's own server (`mcp.server.Server` under its Streamable HTTP session
manager): it speaks both protocol eras to the client. What crosses to the app actors is only the
request's meaning; the app actor adds the envelope of the era its app speaks.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, ConfigDict, TypeAdapter

from actors import richforms
from actors.apps.upstream import ServerRequestRefused, era_of
from actors.asking import MAX_ROUNDS, InputRoundsExceeded, until_complete
from actors.catalog import Wire
from actors.messages import CallFailed, RegistryMessage
from actors.runtime import Abandonment, Mailbox, Reply, ask
from supervisor.model.era import Era
from web.errors import APP_ERROR as APP_ERROR  # the view modules read it here
from web.errors import mcp_error

logger = logging.getLogger("mcpapps.web")
T = TypeVar("T")

# The 2026-07-28 envelope a client puts in `_meta`; the app's own connection has its own.
_ENVELOPE = frozenset(
    {
        types.PROTOCOL_VERSION_META_KEY,
        types.CLIENT_INFO_META_KEY,
        types.CLIENT_CAPABILITIES_META_KEY,
        # A 2026-07-28 client's per-request log level: the app's logs arrive on the app's
        # session, not on this request's stream, so they could reach only other clients.
        types.LOG_LEVEL_META_KEY,
    }
)
NOTIFY_TIMEOUT_S = 5.0

_SERVER_REQUEST: TypeAdapter[Any] = TypeAdapter(types.ServerRequest)
_CAPABILITY = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
_NOTIFICATION: TypeAdapter[Any] = TypeAdapter(types.ServerNotification)


class _AnyResult(BaseModel):
    """The client's answer to a relayed request, kept as it came (the app checks it)."""

    model_config = ConfigDict(extra="allow")


def client_era(ctx: ServerRequestContext[Any, Any]) -> Era:
    """The era the client of a request speaks."""
    return era_of(ctx.protocol_version)


def owner_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The client session a request came on (`_connection` is private to the pinned SDK,
    mcp==2.3.0: the per-request `ServerSession` is a low-level handler's only handle on it).
    A 2026-07-28 request has a connection of its own."""
    return f"client-{id(getattr(ctx.session, '_connection', ctx.session))}"


def app_params(params: Mapping[str, Any] | None) -> tuple[Wire | None, str | int | None]:
    """The request's own params for the app, and the client's progress token. The envelope
    keys are dropped (the app's connection may speak the other era, whose envelope differs),
    and so is the progress token: the app actor asks for progress under a token of its own,
    which no other client can be using."""
    if params is None:
        return None, None
    forwarded = dict(params)
    meta = forwarded.get("_meta")
    token = None
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in _ENVELOPE}
        token = meta.pop("progressToken", None)
        if meta:
            forwarded["_meta"] = meta
        else:
            forwarded.pop("_meta")
    return forwarded, token


class ClientCaller:
    """The client of one request as the app may reach it while the request runs (the app
    actor's `Caller`): server-to-client requests go on that request's own stream."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], progress_token: str | int | None):
        self._ctx = ctx
        self._token = progress_token
        self.owner = owner_of(ctx)
        self.on_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = (
            self._progress if progress_token is not None else None
        )

    async def ask(self, method: str, params: Wire) -> Wire:
        ctx = self._ctx
        if client_era(ctx) is Era.STATELESS or not ctx.session.can_send_request:
            raise ServerRequestRefused(
                f"the client cannot answer {method} here: its connection"
                f" ({ctx.protocol_version}) has no channel for requests from the server"
            )
        if richforms.is_rich(method, params):
            # Not relayed yet: an MCP client of ours would need the method (or the `_meta`)
            # passed on in its own era, and the app was told of the host's support, not its.
            raise richforms.FormUnsupported(
                "a rich form (openai/elicitation) is not passed on to an MCP client of the"
                " front door; it is answered in the chat and in the page's views"
            )
        declared = ctx.session.client_capabilities
        capability = _CAPABILITY.get(method)
        if capability and getattr(declared, capability, None) is None:
            raise ServerRequestRefused(
                f"the client did not declare the {capability} capability, so it is not asked"
                f" {method}"
            )
        request = _SERVER_REQUEST.validate_python({"method": method, "params": params})
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        result = await ctx.session.send_request(request, _AnyResult, metadata=metadata)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        assert self._token is not None
        await self._ctx.session.send_progress_notification(
            self._token,
            progress,
            total,
            message,
            # The SDK's annotation says str; it takes the request id as the client sent it.
            related_request_id=self._ctx.request_id,  # type: ignore[arg-type]
        )


async def complete_input(
    ctx: ServerRequestContext[Any, Any],
    caller: ClientCaller,
    params: Wire | None,
    result: Wire,
    retry: Callable[[Wire], Awaitable[Wire]],
) -> Wire:
    """A 2026-07-28 app asks for input (sampling, elicitation) by answering `input_required`.
    A client of that era retries by itself, so the result goes to it as it is; a handshake-era
    client cannot, so the endpoint asks it each request and retries on its behalf."""
    return await ask_until_complete(client_era(ctx), caller, params, result, retry)


async def ask_until_complete(
    era: Era,
    caller: Any,
    params: Wire | None,
    result: Wire,
    retry: Callable[[Wire], Awaitable[Wire]],
) -> Wire:
    """`complete_input` for a client of `era`."""
    if era is not Era.HANDSHAKE:
        return result
    try:
        return await until_complete(caller.ask, params, result, retry)
    except InputRoundsExceeded:
        asked = f"the app asked for input more than {MAX_ROUNDS} times"
        raise mcp_error(CallFailed(None, asked)) from None


async def ask_registry(
    registry: Mailbox[RegistryMessage],
    make: Callable[[Reply[T]], RegistryMessage],
    *,
    abandoned: Abandonment | None = None,
    errors: Callable[[Exception], MCPError] = mcp_error,
    timeout: float = math.inf,
) -> T:
    """Ask the registry on behalf of a client's request and answer in the client's terms:
    what could not be served becomes the JSON-RPC error `errors` words, and a request its
    client cancels sets `abandoned`, which cancels it at the app and frees its call slot
    there (rather than holding it until the request's deadline)."""
    try:
        return await ask(registry, make, timeout)
    except trio.Cancelled:
        if abandoned is not None:
            abandoned.set()
        raise
    except Exception as error:
        raise errors(error) from None


_EVENTS: Mapping[str, Callable[[Wire], Any]] = {
    "notifications/tools/list_changed": lambda _: ToolsListChanged(),
    "notifications/prompts/list_changed": lambda _: PromptsListChanged(),
    "notifications/resources/list_changed": lambda _: ResourcesListChanged(),
    "notifications/resources/updated": lambda p: ResourceUpdated(uri=p["uri"]),
}


class Audience:
    """The clients connected to one endpoint, as notifications reach them: handshake-era
    clients on their session's standing stream, 2026-07-28 clients on their
    `subscriptions/listen` streams (the SDK's bus and listen handler). `resources/updated`
    goes only to the clients subscribed to that resource, as the app actor names them (it owns
    the subscriptions); what is kept here is only what the actor cannot know, the connected
    sessions. `on_close(owner)` is told when a handshake-era session ends."""

    def __init__(self, on_close: Callable[[str], None] | None = None) -> None:
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        # owner → its session's connection (the SDK's `Connection`, whose standalone channel
        # is the standing stream). Not the `ServerSession` of a request: that one is made per
        # request and holds the request (its scope, its body, its HTTP plumbing) as long as it
        # is kept, and an idle session would keep its opening request's for its whole life.
        self._sessions: dict[str, Any] = {}
        self._on_close = on_close

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Remember each handshake-era connection at its first request, forget it when it
        closes."""
        if client_era(ctx) is Era.STATELESS:
            return await call_next(ctx)
        owner = owner_of(ctx)
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and owner not in self._sessions:
            self._sessions[owner] = connection
            connection.exit_stack.callback(self._closed, owner)
        return await call_next(ctx)

    def _closed(self, owner: str) -> None:
        self._sessions.pop(owner, None)
        if self._on_close is not None:
            self._on_close(owner)

    async def notify(
        self, method: str, params: Wire | None, subscribers: frozenset[str] = frozenset()
    ) -> None:
        """Send one notification to the clients it concerns (`resources/updated` to its
        `subscribers`); a slow or gone client is skipped."""
        event = _EVENTS.get(method)
        if event is not None:
            try:
                await self.bus.publish(event(params or {}))
            except Exception:
                logger.exception("could not publish %s to listen streams", method)
        sessions = self._sessions
        if method == "notifications/resources/updated":
            sessions = {o: s for o, s in sessions.items() if o in subscribers}
        if not sessions:
            return
        try:
            notification = _NOTIFICATION.validate_python({"method": method, "params": params})
        except Exception:
            logger.warning("not relaying a malformed %s notification", method)
            return
        # As the SDK's `ServerSession.send_notification` words it for the standalone channel.
        data = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
        async with trio.open_nursery() as nursery:
            for connection in list(sessions.values()):
                nursery.start_soon(_send_quietly, connection, data["method"], data.get("params"))


async def _send_quietly(connection: Any, method: str, params: Wire | None) -> None:
    with trio.move_on_after(NOTIFY_TIMEOUT_S):
        try:
            await connection.notify(method, params)
        except Exception as error:
            logger.debug("a client missed a notification: %r", error)
