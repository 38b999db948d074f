"""`/mcp`, the endpoint for agents: every model-visible tool of every Running app
under its public name, and the apps' prompts, resources and resource templates
(actors/offers.py says how they are named and routed), on the SDK's server like `/apps/mcp`.

What a tool lists here is what its app lists (title, annotations, outputSchema, execution), under
the public name, without the UI link (actors/tooltable.py `public_listing`). A tool with a UI
keeps its `structuredContent` from the model here, as the tool bridge does: the UI, not the
model, is its reader. Each request becomes a message to the registry; the endpoint keeps no app
state (only the 2026-07-28 round trips waiting for a client's answer, web/mcpdoor/roundtrips.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from actors.catalog import Wire
from actors.messages import (
    CallPublicTool,
    GetToolTable,
    RegistryMessage,
    ToApp,
    UpstreamRequest,
)
from actors.runtime import Abandonment, Forward, Mailbox, ask
from actors.tooltable import PublicTool, ToolTable
from supervisor.model.era import Era
from supervisor.model.errors import InvalidParams, ResourceNotFound
from supervisor.model.limits import DEFAULT_LIMITS, LimitsConfig
from web.intake import InFlightIds
from web.mcpdoor.endpoints import EndpointServer, complete, for_client, session_manager
from web.mcpdoor.fastpath import FastCall, FastPath, QuietCaller
from web.mcpdoor.faststateless import Gone, StatelessCall, StatelessFastPath
from web.mcpdoor.relay import (
    Audience,
    ClientCaller,
    app_params,
    ask_registry,
    ask_until_complete,
    client_era,
    complete_input,
    mcp_error,
)
from web.mcpdoor.roundtrips import Exchange, RoundTrips
from web.mcpdoor.toolowners import ToolOwners

# What a retry of a 2026-07-28 request carries besides its own params.
_RESUMED = ("inputResponses", "requestState")


def for_model(tool: PublicTool, result: Wire) -> Wire:
    """A tool with a UI keeps its structuredContent from the model, as in the tool bridge: the
    UI reads it, the model reads the text."""
    if tool.ui_resource_uri is not None and "structuredContent" in result:
        return {k: v for k, v in result.items() if k != "structuredContent"}
    return result


def _one_page(params: Any) -> None:
    """Every listing of /mcp is one page with no `nextCursor`, so a cursor is one it never
    gave: invalid params, as the MCP spec asks of a server."""
    cursor = getattr(params, "cursor", None)
    if cursor is not None:
        raise mcp_error(
            InvalidParams(
                f"invalid cursor {cursor[:100]!r}: /mcp lists everything in one page and gives none"
            )
        )


class AggregateEndpoint:
    """`/mcp`: what every Running app offers agents, under public names."""

    def __init__(
        self,
        registry: Mailbox[RegistryMessage],
        limits: LimitsConfig = DEFAULT_LIMITS,
        owners: ToolOwners | None = None,
    ) -> None:
        self._registry = registry
        self._owners = owners
        self.audience = Audience()
        self.round_trips = RoundTrips()
        self.in_flight = InFlightIds()
        self.server = EndpointServer("mcpapps", self.audience, self._listen)
        self.server.middleware.append(_no_subscriptions)
        add = self.server.add_request_handler
        add("tools/list", types.PaginatedRequestParams, self._list_tools)
        add("tools/call", types.CallToolRequestParams, self._call)
        add("prompts/list", types.PaginatedRequestParams, self._list_prompts)
        add("prompts/get", types.GetPromptRequestParams, self._get_prompt)
        add("resources/list", types.PaginatedRequestParams, self._list_resources)
        add("resources/templates/list", types.PaginatedRequestParams, self._list_templates)
        add("resources/read", types.ReadResourceRequestParams, self._read_resource)
        self.manager = session_manager(self.server, limits)
        self.fast = FastPath(self.manager, self._fast_call)
        self.fast_stateless = StatelessFastPath(self.server, self._stateless_call)

    async def _fast_call(self, call: FastCall, caller: QuietCaller, abandoned: Abandonment) -> Wire:
        """A call on the lean path (web/mcpdoor/fastpath.py): what `_call` does for a handshake-era
        client that can be asked nothing."""
        params, _token = app_params(call.params)
        assert params is not None
        name = params["name"]
        self._refuse_if_down(name)

        async def send(params: Wire | None) -> Wire:
            params = params or {}
            return await ask_registry(
                self._registry,
                lambda reply: CallPublicTool(
                    name,
                    params.get("arguments") or {},
                    Forward(reply, lambda answer: for_model(*answer)),
                    params.get("_meta"),
                    caller,
                    abandoned,
                    {k: params[k] for k in _RESUMED if k in params} or None,
                ),
                abandoned=abandoned,
            )

        return await ask_until_complete(Era.HANDSHAKE, caller, params, await send(params), send)

    async def _stateless_call(self, call: StatelessCall, gone: Gone) -> Wire:
        """A 2026-07-28 call on the lean path (web/mcpdoor/faststateless.py): what `_call` does
        for that era."""
        params, _token = app_params(call.params)
        assert params is not None
        name = params["name"]
        self._refuse_if_down(name)

        def start(params: Wire | None, exchange: Exchange) -> None:
            params = params or {}
            self._registry.tell(_call_message(name, params, exchange, exchange, exchange.abandoned))

        return await self.round_trips.serve(
            call.owner,
            "tools/call",
            call.capabilities,
            call.caller,
            params,
            start,
            complete,
            gone=gone,
        )

    def _refuse_if_down(self, public_name: str) -> None:
        """A tool of an app known to be down is refused at once, as the registry would refuse
        it, without waiting behind the calls in its mailbox (web/mcpdoor/toolowners.py)."""
        if self._owners is not None and (down := self._owners.refusal(public_name)) is not None:
            raise mcp_error(down)

    async def _listen(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Any:
        """A 2026-07-28 client's `subscriptions/listen`: list changes, but no resources (a
        resource's updates come from its app's session: `/apps/mcp/<appId>` has them)."""
        if params.notifications.resource_subscriptions:
            raise mcp_error(
                InvalidParams(
                    "/mcp offers no resource subscriptions; subscribe on /apps/mcp/<appId>"
                )
            )
        return await self.audience.listen(ctx, params)

    async def _table(self) -> ToolTable:
        return await ask(self._registry, GetToolTable)

    # ---- listings ---------------------------------------------------------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Wire:
        _one_page(params)
        table = await self._table()
        return for_client(ctx, {"tools": [tool.listing for tool in table.tools]})

    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Wire:
        _one_page(params)
        offers = (await self._table()).offers
        return for_client(ctx, {"prompts": [p.listing for p in offers.prompts]})

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Wire:
        _one_page(params)
        offers = (await self._table()).offers
        return for_client(ctx, {"resources": [r.listing for r in offers.resources]})

    async def _list_templates(self, ctx: ServerRequestContext[Any, Any], params: Any) -> Wire:
        _one_page(params)
        offers = (await self._table()).offers
        return for_client(ctx, {"resourceTemplates": [t.listing for t in offers.templates]})

    # ---- requests passed to one app ---------------------------------------------------------

    async def _call(self, ctx: ServerRequestContext[Any, Any], typed: Any) -> Wire:
        params, token = app_params(ctx.params)
        assert params is not None
        self._refuse_if_down(typed.name)
        caller = ClientCaller(ctx, token)

        def message(
            params: Wire, reply: Any, caller: Any, abandoned: Abandonment | None
        ) -> CallPublicTool:
            return _call_message(typed.name, params, reply, caller, abandoned)

        return await self._pass_on(ctx, caller, params, message)

    async def _get_prompt(self, ctx: ServerRequestContext[Any, Any], typed: Any) -> Wire:
        prompt = (await self._table()).offers.prompt(typed.name)
        if prompt is None:
            raise mcp_error(InvalidParams(f"unknown prompt '{typed.name}'"))
        params, token = app_params(ctx.params)
        params = {**(params or {}), "name": prompt.name}
        return await self._to_app(ctx, prompt.app_id, params, ClientCaller(ctx, token))

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any], typed: Any) -> Wire:
        uri = str(typed.uri)
        app_id = (await self._table()).offers.owner_of(uri)
        if app_id is None:
            unknown = f"no running app offers the resource '{uri}'"
            raise mcp_error(ResourceNotFound(unknown, data={"uri": uri}))
        params, token = app_params(ctx.params)
        return await self._to_app(ctx, app_id, params, ClientCaller(ctx, token))

    async def _to_app(
        self, ctx: ServerRequestContext[Any, Any], app_id: str, params: Wire | None, caller: Any
    ) -> Wire:
        def message(params: Wire, reply: Any, caller: Any, abandoned: Abandonment | None) -> ToApp:
            return ToApp(app_id, UpstreamRequest(ctx.method, params, reply, caller, abandoned))

        return await self._pass_on(ctx, caller, params or {}, message)

    async def _pass_on(
        self,
        ctx: ServerRequestContext[Any, Any],
        caller: ClientCaller,
        params: Wire,
        message: Callable[[Wire, Any, Any, Abandonment | None], RegistryMessage],
    ) -> Wire:
        """Send the request to its app and answer the client in its own era: a 2026-07-28
        client through a round trip (the app's questions become `input_required`), a
        handshake-era client asked on its request's stream (and on its behalf when the app
        answers `input_required`)."""
        if client_era(ctx) is Era.STATELESS:

            def start(params: Wire | None, exchange: Exchange) -> None:
                self._registry.tell(message(params or {}, exchange, exchange, exchange.abandoned))

            return await self.round_trips.run(ctx, caller, params, start, _complete(ctx))

        async def send(params: Wire | None) -> Wire:
            abandoned = Abandonment()
            return await ask_registry(
                self._registry,
                lambda reply: message(params or {}, reply, caller, abandoned),
                abandoned=abandoned,
            )

        result = await send(params)
        return for_client(ctx, await complete_input(ctx, caller, params, result, send))


def _call_message(
    name: str, params: Wire, reply: Any, caller: Any, abandoned: Abandonment | None
) -> CallPublicTool:
    """A client's call of a tool by its public name, for the registry to route; a retry of a
    2026-07-28 call carries what answers the app's question."""
    resumed = {k: params[k] for k in _RESUMED if k in params}
    return CallPublicTool(
        name,
        params.get("arguments") or {},
        Forward(reply, lambda answer: for_model(*answer)),
        params.get("_meta"),
        caller,
        abandoned,
        resumed or None,
    )


async def _no_subscriptions(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """The SDK announces `resources.subscribe` to 2026-07-28 clients whenever
    `subscriptions/listen` is served; `/mcp` serves it for list changes only."""
    result = await call_next(ctx)
    if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
        capabilities = result.get("capabilities")
        resources = capabilities.get("resources") if isinstance(capabilities, dict) else None
        if isinstance(resources, dict):
            resources.pop("subscribe", None)
    return result


def _complete(ctx: ServerRequestContext[Any, Any]) -> Callable[[Wire], Awaitable[Wire]]:
    async def finish(result: Wire) -> Wire:
        return for_client(ctx, result)

    return finish
