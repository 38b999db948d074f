"""One connection to an app, as the SDK sees it: the `mcp.Client` over our stdio streams or the
SDK's Streamable HTTP or HTTP+SSE client (actors/apps/httpclients.py), the catalog it
enumerates, liveness probes and how SDK errors read.

Everything here is per connection: the app actor makes a new `Upstream` after every restart.
The SDK's and the transport's errors enter here and leave as our own (`UpstreamLost`,
`UpstreamTimeout`, `UpstreamRejected`), so the app actor never classifies an SDK error itself.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

import httpx2
import mcp
import mcp_types as types
import trio
from mcp.client import advertise
from mcp.client.session import _preconnect_stamp
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from actors.apps.customrequests import answering
from actors.apps.direct import DirectRequests
from actors.catalog import Catalog, Wire
from supervisor import __version__
from supervisor.model.era import Era, EraSetting
from supervisor.model.errors import (
    McpappsError,
    ProtocolViolation,
    UpstreamError,
    UpstreamLost,
    UpstreamRejected,
    UpstreamTimeout,
)

logger = logging.getLogger("mcpapps.app")
_RAW: TypeAdapter[Wire] = TypeAdapter(dict[str, Any])

UI_EXTENSION = "io.modelcontextprotocol/ui"
# Rich forms (actors/richforms.py): advertised, and the handshake era's request for one answered
# beside the SDK session (actors/apps/customrequests.py), when the app may ask its clients.
FORMS_EXTENSION = "openai/elicitation"
FORMS_METHOD = "openai/elicitation/create"
UI_MIME_TYPE = "text/html;profile=mcp-app"
MAX_PAGES = 10_000  # a server that hands out cursors forever must not hold start-up forever

# How the SDK client starts. "auto" starts pinned (no wire traffic) and `connect` negotiates:
# the handshake first, then `server/discover` if the app refuses the handshake.
_MODES: Mapping[EraSetting, str] = {
    "auto": LATEST_MODERN_VERSION,
    "handshake": "legacy",
    "stateless": LATEST_MODERN_VERSION,
}


def era_of(protocol_version: str) -> Era:
    """The era of a negotiated protocol revision."""
    return Era.STATELESS if protocol_version in MODERN_PROTOCOL_VERSIONS else Era.HANDSHAKE


def _is_connection_error(error: BaseException) -> bool:
    """Whether an error means the connection itself is broken (restart it), as opposed to an
    error the app answered with (report it, keep the connection)."""
    if isinstance(error, MCPError):
        if error.error.code == types.CONNECTION_CLOSED:
            return True
        # Streamable HTTP's spelling of "this session no longer exists" (the upstream restarted).
        return error.error.code == types.INVALID_REQUEST and error.error.message == (
            "Session terminated"
        )
    return isinstance(
        error,
        SubscriptionLost
        | httpx2.TransportError
        | trio.BrokenResourceError
        | trio.ClosedResourceError
        | OSError,
    )


def _is_timeout(error: BaseException) -> bool:
    return isinstance(error, MCPError) and error.error.code == types.REQUEST_TIMEOUT


# What the SDK and the transport raise for a request that failed.
_SDK_ERRORS = (
    MCPError,
    SubscriptionLost,
    httpx2.TransportError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    OSError,
)


def upstream_error(error: Exception) -> Exception:
    """The error of our family that an SDK or transport error stands for (anything else is
    given back as it is): a broken connection, a timeout, or the app's own error answer."""
    if _is_connection_error(error):
        return UpstreamLost(error_text(error))
    if _is_timeout(error):
        return UpstreamTimeout(error_text(error))
    if isinstance(error, MCPError):
        return UpstreamRejected(error_text(error), error.error)
    return error


@contextlib.contextmanager
def _ours() -> Iterator[None]:
    """Where the SDK is called: its errors come out as `upstream_error` maps them."""
    try:
        yield
    except _SDK_ERRORS as error:
        mapped = upstream_error(error)
        if mapped is error:
            raise
        raise mapped from error


def error_text(error: BaseException) -> str:
    """One readable sentence for an SDK or transport error."""
    if isinstance(error, UpstreamError):
        return str(error)  # worded already, when it entered
    if isinstance(error, MCPError):
        if error.error.code == types.CONNECTION_CLOSED:
            return "the connection closed"
        if error.error.code == types.METHOD_NOT_FOUND and error.error.message == "Not Found":
            # The SDK's stand-in for an HTTP 404 without a JSON-RPC body.
            return "the server answered HTTP 404 Not Found: check the app's url"
        if error.error.message == "Server returned an error response":
            return "the server answered with an HTTP error status"
        return f"{error.error.message} (JSON-RPC error {error.error.code})"
    if isinstance(error, SubscriptionLost):
        return "the app's change-notification stream ended abruptly"
    if isinstance(error, httpx2.ConnectError):
        return f"cannot connect: {error}"
    if isinstance(error, httpx2.TransportError):
        return f"HTTP transport error: {error or type(error).__name__}"
    text = str(error) or type(error).__name__
    return text[:500]


class Upstream:
    """A live, negotiated client session to one app."""

    def __init__(self, client: mcp.Client, direct: DirectRequests | None = None) -> None:
        self.client = client
        # A stdio app's requests that pass by the SDK session (actors/apps/direct.py).
        self._direct = direct
        # On 2026-07-28 an app logs only for requests that ask (`_meta` logLevel); the app
        # actor sets this from `logging/setLevel`, which that era does not have.
        self.log_level: str | None = None

    @property
    def protocol_version(self) -> str:
        return self.client.protocol_version

    @property
    def era(self) -> Era:
        return era_of(self.protocol_version)

    @property
    def capabilities(self) -> types.ServerCapabilities:
        return self.client.server_capabilities

    async def catalog(self) -> Catalog:
        """Every page of every list the app declared. Raises `UpstreamError`s (and
        `ProtocolViolation` for a listing that is not one)."""
        caps = self.capabilities
        tools = await self._pages(types.ListToolsRequest, "tools") if caps.tools else ()
        resources: tuple[Wire, ...] = ()
        templates: tuple[Wire, ...] = ()
        if caps.resources:
            resources = await self._pages(types.ListResourcesRequest, "resources")
            templates = await self._pages(types.ListResourceTemplatesRequest, "resourceTemplates")
        prompts = await self._pages(types.ListPromptsRequest, "prompts") if caps.prompts else ()
        declared = caps.model_dump(by_alias=True, mode="json", exclude_none=True)
        info = self.client.server_info
        said = info.model_dump(by_alias=True, mode="json", exclude_none=True) if info else {}
        return Catalog(tools, resources, templates, prompts, declared, self.era, said)

    async def _pages(self, request: type[Any], field: str) -> tuple[Wire, ...]:
        items: list[Wire] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await self._unvalidated(
                request(params=types.PaginatedRequestParams(cursor=cursor))
            )
            found = page.get(field)
            if not isinstance(found, list):
                raise ProtocolViolation(f"the app's answer to a listing has no '{field}' list")
            items.extend(item for item in found if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                return tuple(items)
            if cursor in seen:
                raise ProtocolViolation(f"listing {field} repeated the cursor {cursor!r}")
            seen.add(cursor)
        raise ProtocolViolation(f"listing {field} took more than {MAX_PAGES} pages")

    async def request(self, request: Any, timeout: float | None = None) -> Wire:
        """Send a request; the result in wire form (checked by the SDK against the protocol).
        With `timeout`, the SDK gives up after that long and tells the app (`notifications/
        cancelled`); its own timeout is used rather than a cancel scope because the SDK sends
        that notice shielded for up to 5 s when a scope abandons the request, which a frozen
        HTTP app would make the caller wait for."""
        with _ours():
            return await self.client.session.send_request(  # type: ignore[type-var]
                request, _RAW, request_read_timeout_seconds=timeout
            )

    async def _unvalidated(self, request: Any) -> Wire:
        """Send a listing request and take the page as the app sent it. The SDK checks a whole
        `tools/list` page against the protocol schema, so one tool whose inputSchema is not an
        object would make every tool of the app unreadable; only that tool should be left out."""
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        return await self.send(data["method"], data.get("params"))

    async def send(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        on_progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> Wire:
        """Send a request as it is and return the app's result as it is (the front door passes
        both through). The params are this app's era-neutral fields: the envelope
        of the negotiated revision (protocol version, capabilities, headers) is added here
        exactly as the SDK's own requests get it. With `on_progress`, the SDK puts its own
        progress token on the request and hands the app's progress notices to it.

        On a stdio app a request that asks for no progress passes by the SDK session, with
        the same meaning (actors/apps/direct.py). This uses two private members of the pinned SDK
        (mcp==2.3.0): `_stamp` adds the envelope as `send_request` does, and the dispatcher
        sends the request unvalidated."""
        session = self.client.session
        data: dict[str, Any] = {"method": method}
        if params is not None:
            data["params"] = dict(params)
        options: Any = {}  # the SDK's CallOptions, a TypedDict
        if timeout is not None:
            options["timeout"] = timeout
        if on_progress is not None:
            options["on_progress"] = on_progress
        if self.log_level is not None and self.era is Era.STATELESS:
            fields = data.setdefault("params", {})
            meta = {types.LOG_LEVEL_META_KEY: self.log_level, **(fields.get("_meta") or {})}
            fields["_meta"] = meta
        session._stamp(data, options)
        with _ours():
            # `cancel_on_abandon` off (the SDK's own negotiation requests) is the SDK's to honour.
            if (
                self._direct is not None
                and on_progress is None
                and "cancel_on_abandon" not in options
            ):
                raw = await self._direct.send(method, data.get("params"), timeout)
            else:
                raw = await session._dispatcher.send_raw_request(
                    method, data.get("params"), options
                )
        if not isinstance(raw, dict):
            raise ProtocolViolation(f"the app answered {method} with a non-object result")
        return raw

    async def watch_changes(
        self,
        on_list_change: Callable[[], None],
        on_resource_updated: Callable[[str], None],
        subscriptions: Callable[[], tuple[str, ...]],
        resubscribe: Callable[[], trio.Event],
        on_listening: Callable[[], None] = lambda: None,
    ) -> None:
        """On 2026-07-28, change notifications come only on a `subscriptions/listen` stream
        (in the handshake era they arrive unasked: see the app actor's message handler). The
        stream names the resources the app's clients subscribed to; when that set changes
        (`resubscribe()` is set), the stream is opened again with the new set, and
        `on_listening` is called each time the app has acknowledged a stream (and when this
        ends)."""
        if self.era is Era.HANDSHAKE:
            return
        try:
            with _ours():
                await self._watch(
                    on_list_change, on_resource_updated, subscriptions, resubscribe, on_listening
                )
        finally:
            on_listening()

    async def _watch(
        self,
        on_list_change: Callable[[], None],
        on_resource_updated: Callable[[str], None],
        subscriptions: Callable[[], tuple[str, ...]],
        resubscribe: Callable[[], trio.Event],
        on_listening: Callable[[], None],
    ) -> None:
        caps = self.capabilities
        first, refused = True, False
        while True:
            changed = resubscribe()
            uris = subscriptions() if caps.resources and not refused else ()
            try:
                async with (
                    self.client.listen(
                        tools_list_changed=bool(caps.tools),
                        resources_list_changed=bool(caps.resources),
                        prompts_list_changed=bool(caps.prompts),
                        resource_subscriptions=uris,
                    ) as subscription,
                    trio.open_nursery() as nursery,
                ):
                    on_listening()
                    if not first:
                        on_list_change()  # a change while the stream was being reopened
                    first = False
                    nursery.start_soon(_cancel_when, changed, nursery.cancel_scope)
                    async for event in subscription:
                        if isinstance(event, ResourceUpdated):
                            on_resource_updated(event.uri)
                        else:
                            on_list_change()
                    nursery.cancel_scope.cancel()
            except MCPError as error:
                if uris:
                    # The app refused a resource a client named: listen without them until
                    # the set changes, so that list changes still arrive.
                    logger.warning(
                        "the app refused to watch %s: %s", ", ".join(uris), error_text(error)
                    )
                    refused = True
                    continue
                logger.debug("no change notifications from this app: %s", error_text(error))
                return
            except TimeoutError:
                logger.warning("the app did not acknowledge its change-notification stream")
                return
            if not changed.is_set():
                return  # the app closed the stream
            refused = False

    async def probe(self, timeout: float) -> None:
        """A liveness probe: `ping`, or `server/discover` on 2026-07-28, which has no ping."""
        if self.era is Era.STATELESS:
            with _ours():
                await self.client.session.send_discover(self.protocol_version)
        else:
            await self.request(types.PingRequest(params=types.RequestParams()), timeout)


async def _cancel_when(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _extensions(ui: bool, forms: bool) -> list[Any]:
    extensions = [advertise(UI_EXTENSION, {"mimeTypes": [UI_MIME_TYPE]})] if ui else []
    if forms:
        extensions.append(advertise(FORMS_EXTENSION, {"form": {}}))
    return extensions


@contextlib.asynccontextmanager
async def connect(
    transport: Any,
    *,
    protocol: EraSetting,
    ui: bool,
    on_message: Callable[[Any], Awaitable[None]],
    on_server_request: ServerRequestHandler | None = None,
    direct: DirectRequests | None = None,
) -> AsyncIterator[Upstream]:
    """Negotiate a session over `transport` (`_MODES`, `_handshake_first`). With
    `on_server_request`, the app may ask for sampling and elicitation (the front door relays
    them to the client whose call caused them), and ask with rich forms (`FORMS_EXTENSION`
    advertised, `FORMS_METHOD` answered). `direct`: a stdio app's requests that pass by the
    session on the same pipes."""
    callbacks: dict[str, Any] = {}
    if on_server_request is not None:
        callbacks = _server_request_callbacks(on_server_request)
        transport = answering(transport, (FORMS_METHOD,), on_server_request)
    client = mcp.Client(
        transport,
        mode=_MODES[protocol],
        message_handler=on_message,  # type: ignore[arg-type]  # the SDK's union, taken whole
        **callbacks,
        extensions=_extensions(ui, forms=on_server_request is not None),
        cache=None,  # the actor refreshes the catalog on list_changed; stale reads are worse
        client_info=types.Implementation(name="mcpapps", version=__version__),
    )
    async with contextlib.AsyncExitStack() as stack:
        with _ours():
            await stack.enter_async_context(client)
            if protocol == "auto":
                await _handshake_first(client.session)
            elif protocol == "stateless":
                await _discover(client.session)
        # The SDK's own teardown (leaving `client`) may still raise its errors, grouped with
        # the body's: the app actor reads those as the incarnation's death.
        yield Upstream(client, direct)


async def _handshake_first(session: Any) -> None:
    """`protocol = "auto"`: the handshake era when the app offers it, else 2026-07-28.

    The handshake era first, because only a long-lived handshake session has a channel for
    requests from the app: a tool written in that style (it asks for sampling or elicitation
    from inside the call, as apps written before 2026-07-28 do) fails on a 2026-07-28
    connection, while a tool written for 2026-07-28 (an `input_required` result) works on
    both. The front door carries either kind of question to clients of either era. On one
    stdio connection the first request fixes the era, so there is no asking `server/discover`
    first and choosing afterwards. An app that refuses the handshake (a JSON-RPC error, or a
    version of no handshake revision) is asked `server/discover` on the same connection.

    The client was started pinned to 2026-07-28 (`_MODES`), so its requests carry that era's
    envelope and headers; `initialize` must go without them, as from a fresh session (over
    HTTP the server picks the era by the header). `_preconnect_stamp` is private to the pinned
    SDK (mcp==2.3.0): it is what a fresh session stamps its requests with."""
    session._stamp = _preconnect_stamp
    try:
        await session.initialize()
    except MCPError as error:
        if _is_timeout(error) or _is_connection_error(error):
            raise
        logger.debug("the app refused the handshake (%s); trying 2026-07-28", error_text(error))
        await _discover(session)
    except RuntimeError as error:  # the SDK: the app answered with a version it cannot serve
        logger.debug("the app refused the handshake (%s); trying 2026-07-28", error)
        await _discover(session)


async def _discover(session: Any) -> None:
    """A pinned revision is adopted without asking the app; ask it anyway, so the
    capabilities (which lists exist) are the app's and not a blank stand-in."""
    discovered = await session.send_discover(LATEST_MODERN_VERSION)
    session.adopt(types.DiscoverResult.model_validate(discovered))


ServerRequestHandler = Callable[[str, Wire], Awaitable[Wire]]


class ServerRequestRefused(McpappsError):
    """No one can answer the app's sampling or elicitation request; the text says why."""


def _server_request_callbacks(handler: ServerRequestHandler) -> dict[str, Any]:
    """SDK callbacks that hand the app's requests to `handler` as wire dicts, and its answers
    (or its refusal, as a JSON-RPC error) back to the app."""

    async def answer(method: str, params: Any, result_type: Any) -> Any:
        try:
            result = await handler(
                method, params.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
            return result_type.validate_python(result)
        except MCPError as error:
            return error.error
        except Exception as error:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=str(error) or repr(error))

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        result_type = _SAMPLING_WITH_TOOLS if params.tools else _SAMPLING
        return await answer("sampling/createMessage", params, result_type)

    async def elicitation(context: Any, params: Any) -> Any:
        return await answer("elicitation/create", params, _ELICIT)

    return {"sampling_callback": sampling, "elicitation_callback": elicitation}


_SAMPLING: TypeAdapter[Any] = TypeAdapter(types.CreateMessageResult)
_SAMPLING_WITH_TOOLS: TypeAdapter[Any] = TypeAdapter(types.CreateMessageResultWithTools)
_ELICIT: TypeAdapter[Any] = TypeAdapter(types.ElicitResult)
