"""The two MCP endpoints, each the SDK's server under its Streamable HTTP session manager:

- `AppEndpoint`, `/apps/mcp/<appId>`: everything a client asks is passed to the
  app's one upstream session, owned by its app actor, and the app's answer comes back as it is;
- `AggregateEndpoint`, `/mcp`: in web/mcpdoor/aggregate.py, on the same server class.

Neither keeps app state: each request becomes a message to the registry, which routes it.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, get_args

import mcp_types as types
from mcp.server import Server
from mcp.server.caching import CacheableMethod, CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.methods import INPUT_REQUIRED_METHODS
from pydantic import BaseModel, ConfigDict, ValidationError

from actors.catalog import Catalog, Wire
from actors.messages import (
    GetCatalog,
    RegistryMessage,
    ReleaseSubscriptions,
    ToApp,
    UpstreamRequest,
)
from actors.runtime import ASK_TIMEOUT_S, Abandonment, Mailbox
from supervisor import __version__
from supervisor.model.era import Era
from supervisor.model.errors import BadRequest, InvalidParams
from supervisor.model.limits import DEFAULT_LIMITS, LimitsConfig
from web.errors import mcp_error
from web.intake import InFlightIds
from web.mcpdoor.fastpath import FastCall, FastPath, QuietCaller, query_value
from web.mcpdoor.faststateless import Gone, StatelessCall, StatelessFastPath
from web.mcpdoor.relay import (
    Audience,
    ClientCaller,
    app_params,
    ask_registry,
    ask_until_complete,
    client_era,
    complete_input,
)
from web.mcpdoor.roundtrips import Exchange, RoundTrips

logger = logging.getLogger("mcpapps.web")

_LISTENS = itertools.count(1)


class _AnyParams(types.RequestParams):
    """Params of a method the endpoint passes on without reading (the app checks them)."""

    model_config = ConfigDict(extra="allow")


# Method → the params model the SDK checks before the request is passed on.
FORWARDED: dict[str, type[BaseModel]] = {
    "tools/list": types.PaginatedRequestParams,
    "tools/call": types.CallToolRequestParams,
    "resources/list": types.PaginatedRequestParams,
    "resources/templates/list": types.PaginatedRequestParams,
    "resources/read": types.ReadResourceRequestParams,
    "resources/subscribe": types.SubscribeRequestParams,
    "resources/unsubscribe": types.UnsubscribeRequestParams,
    "prompts/list": types.PaginatedRequestParams,
    "prompts/get": types.GetPromptRequestParams,
    "completion/complete": types.CompleteRequestParams,
    "logging/setLevel": types.SetLevelRequestParams,
    "tasks/get": _AnyParams,
    "tasks/result": _AnyParams,
    "tasks/list": _AnyParams,
    "tasks/cancel": _AnyParams,
}


class EndpointServer(Server[Any]):
    """The SDK server, announcing the change notifications the endpoint relays. Listings say
    they are stale at once (ttl 0, private; a 2026-07-28 client needs a hint, and an app's
    lists change whenever it restarts), unless the app itself gave one."""

    def __init__(self, name: str, audience: Audience, listen: Any = None) -> None:
        self.input_schemas: dict[str, Wire] = {}
        super().__init__(
            name,
            version=__version__,
            cache_hints={method: CacheHint() for method in get_args(CacheableMethod)},
            # The SDK checks a 2026-07-28 call's Mcp-Param headers against the tool's schema;
            # without this it would list the tools again for every call.
            get_tool_input_schema=self.input_schemas.get,
        )
        self.add_request_handler(
            "subscriptions/listen",
            types.SubscriptionsListenRequestParams,
            listen or audience.listen,
        )
        self.middleware.append(audience.middleware)

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(True, True, True),
            experimental_capabilities,
            extensions,
        )


def session_manager(server: Server[Any], limits: LimitsConfig) -> StreamableHTTPSessionManager:
    """The SDK's session manager of an endpoint (each app's, and `/mcp`), under the limits."""
    # SSE responses, not JSON: a request's stream is where the app's sampling, elicitation and
    # progress reach the client that asked.
    return StreamableHTTPSessionManager(
        server,
        json_response=False,
        session_idle_timeout=limits.session_idle_s,
        max_request_body_size=limits.max_body_bytes,
        max_sessions=limits.max_sessions,
    )


class AppEndpoint:
    """`/apps/mcp/<appId>` for one app."""

    def __init__(
        self, app_id: str, registry: Mailbox[RegistryMessage], limits: LimitsConfig = DEFAULT_LIMITS
    ) -> None:
        self.app_id = app_id
        self._registry = registry
        self.audience = Audience(on_close=self._release)
        self.round_trips = RoundTrips()
        self.server = EndpointServer(f"mcpapps/{app_id}", self.audience, self._listen)
        for method, params_type in FORWARDED.items():
            self.server.add_request_handler(method, params_type, self._forward)
        self.server.middleware.append(self._mirror_capabilities)
        self.server.middleware.append(self._task_augmented_call)
        self.manager = session_manager(self.server, limits)
        self.in_flight = InFlightIds()
        self.fast = FastPath(self.manager, self._fast_call)
        self.fast_stateless = StatelessFastPath(self.server, self._stateless_call)

    async def _fast_call(self, call: FastCall, caller: QuietCaller, abandoned: Abandonment) -> Wire:
        """A call on the lean path (web/mcpdoor/fastpath.py): what `_forward` does for a
        handshake-era `tools/call` whose client can be asked nothing."""
        params, _token = app_params(call.params)
        params = with_session_id(query_value(call.query, "sessionId"), params)

        async def send(params: Wire | None) -> Wire:
            return await ask_registry(
                self._registry,
                lambda reply: ToApp(
                    self.app_id, UpstreamRequest("tools/call", params, reply, caller, abandoned)
                ),
                abandoned=abandoned,
            )

        return await ask_until_complete(Era.HANDSHAKE, caller, params, await send(params), send)

    async def _stateless_call(self, call: StatelessCall, gone: Gone) -> Wire:
        """A 2026-07-28 call on the lean path (web/mcpdoor/faststateless.py): what `_forward`
        does for that era's `tools/call`."""
        params, _token = app_params(call.params)
        params = with_session_id(query_value(call.query, "sessionId"), params)
        return await self.round_trips.serve(
            call.owner,
            "tools/call",
            call.capabilities,
            call.caller,
            params,
            self._start,
            complete,
            gone=gone,
        )

    def _release(self, owner: str) -> None:
        self._registry.tell(ToApp(self.app_id, ReleaseSubscriptions(owner)))

    async def _listen(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        """A 2026-07-28 client's `subscriptions/listen`: the resources it names are subscribed
        to on the app's session for as long as the stream lasts."""
        owner = f"listen-{next(_LISTENS)}"  # unique for the process, unlike an object id
        caller = _Subscriber(owner)
        try:
            for uri in params.notifications.resource_subscriptions or ():
                await ask_registry(
                    self._registry,
                    lambda reply, uri=uri: ToApp(  # type: ignore[misc]
                        self.app_id,
                        UpstreamRequest("resources/subscribe", {"uri": uri}, reply, caller),
                    ),
                )
            return await self.audience.listen(ctx, params)
        finally:
            self._release(owner)

    async def _mirror_capabilities(
        self, ctx: ServerRequestContext[Any, Any], call_next: Any
    ) -> Any:
        """The client is told what the app can do (a client acts on it: the Inspector sets a
        log level when logging is announced), plus what the endpoint adds to it."""
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            catalog: Catalog = await ask_registry(
                self._registry,
                lambda reply: ToApp(self.app_id, GetCatalog(reply)),
                timeout=ASK_TIMEOUT_S,
            )
            result = {**result, "capabilities": mirrored_capabilities(catalog)}
        return result

    async def _task_augmented_call(
        self, ctx: ServerRequestContext[Any, Any], call_next: Any
    ) -> Any:
        """A handshake-era `tools/call` that asks to run as a task (MCP Tasks, 2025-11-25) is
        answered with the app's `CreateTaskResult` as it is. Through `call_next` the SDK would
        check that result against `CallToolResult` and refuse it, and the task the app had
        started would be lost to the client. (On 2026-07-28 tasks are an extension whose
        results the SDK passes on unchecked.)"""
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or client_era(ctx) is Era.STATELESS
            or not params
            or params.get("task") is None
        ):
            return await call_next(ctx)
        try:
            typed = types.CallToolRequestParams.model_validate(params, by_name=False)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in error.errors()
            )
            raise mcp_error(InvalidParams(f"invalid tools/call params: {problems}")) from None
        return await self._forward(ctx, typed)

    async def _forward(self, ctx: ServerRequestContext[Any, Any], _typed: Any) -> Wire:
        params, token = app_params(ctx.params)
        if ctx.method == "tools/call":
            params = _with_session_id(ctx, params)
        caller = ClientCaller(ctx, token)

        async def send(params: Wire | None) -> Wire:
            abandoned = Abandonment()
            return await ask_registry(
                self._registry,
                lambda reply: ToApp(
                    self.app_id, UpstreamRequest(ctx.method, params, reply, caller, abandoned)
                ),
                abandoned=abandoned,
            )

        if client_era(ctx) is Era.STATELESS and ctx.method in INPUT_REQUIRED_METHODS:
            return await self.round_trips.run(
                ctx, caller, params, self._start, lambda result: _as_is(ctx, result)
            )
        result = await send(params)
        return for_client(ctx, await complete_input(ctx, caller, params, result, send))

    def _start(self, params: Wire | None, exchange: Exchange) -> None:
        """A 2026-07-28 client's request, sent to the app with its exchange as reply and
        caller (web/mcpdoor/roundtrips.py)."""
        self._registry.tell(
            ToApp(
                self.app_id,
                UpstreamRequest(exchange.method, params, exchange, exchange, exchange.abandoned),
            )
        )


class _Subscriber:
    """The `Caller` of a subscription made for a listen stream: it can only be told updates."""

    on_progress = None

    def __init__(self, owner: str) -> None:
        self.owner = owner

    async def ask(self, method: str, params: Wire) -> Wire:
        raise mcp_error(BadRequest(f"a listen stream cannot answer {method}"))


async def _as_is(ctx: ServerRequestContext[Any, Any], result: Wire) -> Wire:
    return for_client(ctx, result)


def for_client(ctx: ServerRequestContext[Any, Any], result: Wire) -> Wire:
    """A 2026-07-28 client needs every result to say it is complete; an app of the handshake
    era (or the endpoint's own listing) does not say so."""
    return said_complete(result) if client_era(ctx) is Era.STATELESS else result


async def complete(result: Wire) -> Wire:
    """`said_complete`, as the last step of a round trip."""
    return said_complete(result)


def said_complete(result: Wire) -> Wire:
    """A result for a 2026-07-28 client: it says it is complete unless it says otherwise."""
    return result if "resultType" in result else {**result, "resultType": "complete"}


def mirrored_capabilities(catalog: Catalog) -> Wire:
    """The app's capabilities as the endpoint serves them: its lists announce changes (the
    endpoint sends list_changed after every catalog refresh and restart), and on an app that
    speaks 2026-07-28 resources can be subscribed to (the app actor listens for them)."""
    caps = {k: dict(v) if isinstance(v, dict) else v for k, v in catalog.capabilities.items()}
    for kind in ("tools", "resources", "prompts"):
        if isinstance(caps.get(kind), dict):
            caps[kind]["listChanged"] = True
    if catalog.era is Era.STATELESS and isinstance(caps.get("resources"), dict):
        caps["resources"]["subscribe"] = True
    return caps


def _with_session_id(ctx: ServerRequestContext[Any, Any], params: Wire | None) -> Wire | None:
    request = ctx.request
    query = getattr(request, "query_params", None)
    return with_session_id(query.get("sessionId") if query is not None else None, params)


def with_session_id(session_id: str | None, params: Wire | None) -> Wire | None:
    """`?sessionId=` on the endpoint's URL goes to the app as `_meta.sessionId` of every tool
    call, so an app can tell the chat sessions of its callers apart."""
    if not session_id or params is None:
        return params
    meta = dict(params.get("_meta") or {})
    meta["sessionId"] = session_id
    return {**params, "_meta": meta}
