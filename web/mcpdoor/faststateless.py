"""The lean path of a 2026-07-28 `tools/call`: the SDK's checks of the request, then the call,
answered as the one JSON body the SDK's path answers it with.

A 2026-07-28 request is one POST with no session: the client puts its protocol version and
capabilities in `params._meta` (the envelope) and mirrors the method, the tool's name and the
arguments the tool marks (`x-mcp-header`) in the `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
headers. The SDK serves it with a fresh connection, a runner, a context and its middleware for
each request, and, since the endpoints answer with event streams when something must be streamed,
two tasks and a memory stream to find out whether anything is (for a `tools/call` whose client
asked for no progress, nothing ever is: the answer is plain JSON). That machinery was about a
third of what such a call cost the supervisor.

A call takes this path only when the SDK would run it: every check the SDK's transport makes
before the handler is made here with the SDK's own functions, in its order (one body, a request
of `tools/call` with an id, the `Accept` header, no routing header twice, the envelope and the
`MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers against the body, the `Mcp-Param-*`
headers against the tool's schema, the params against the SDK's request surface for that
version), and a request that fails one, or asks for progress (which needs the stream), or for a
task, is handed to the SDK untouched: its error is the SDK's. The call itself is what the
endpoint's handler does for that era (a round trip of the app's questions as `input_required`,
web/mcpdoor/roundtrips.py, with the capabilities of this request's envelope), the result is
shaped by the SDK's own result pipeline (`ServerRunner._serialize`: the result surface of the
version, `resultType`, the `serverInfo` stamp), errors are worded by the SDK's rule
(`modern_error_data`) with its HTTP status, and a client that goes away cancels the call at the
app, as on the SDK's path. What it does not make is the SDK's OpenTelemetry span (no exporter is
installed: the span was a no-op).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from mcp.server.runner import ServerRunner, modern_error_data
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp_types import CallToolRequestParams, ClientCapabilities
from mcp_types.methods import validate_client_request
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers

from actors.catalog import Wire
from supervisor.model.errors import ClientGone
from web.mcpdoor.fastpath import QuietCaller, accepts_both, error_wire, response

_MCP_PARAM = MCP_PARAM_HEADER_PREFIX.lower()
_ROUTING = frozenset(
    name.lower().encode("latin-1")
    for name in (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER)
)
_CALLS = itertools.count(1)


@attrs.frozen
class StatelessCall:
    """One 2026-07-28 `tools/call` taken by the lean path."""

    request_id: str | int
    params: Wire  # as the client sent them, envelope included
    version: str
    capabilities: Any  # the client's, typed as the SDK types them (None if mis-shaped)
    query: str  # the request's query string (`?sessionId=` on `/apps/mcp/<appId>`)
    owner: str  # stands for the client (each 2026-07-28 request is a client session of its own)

    @property
    def caller(self) -> QuietCaller:
        """The client as the app's actor sees it: no progress, and nothing to ask on a stream
        (a question of the app becomes `input_required`, web/mcpdoor/roundtrips.py)."""
        return QuietCaller(self.owner.removeprefix("client-"))


# Returns when the client has gone away.
Gone = Callable[[], Awaitable[None]]
# The endpoint's call: the result for the client (before the SDK's shaping), or an error
# (`ClientGone` when `Gone` returned first).
PassStateless = Callable[[StatelessCall, Gone], Awaitable[Wire]]


class StatelessFastPath:
    """The lean path of one endpoint for 2026-07-28 calls. `server` is the endpoint's SDK
    server (its tools' input schemas, its result pipeline)."""

    def __init__(self, server: Any, pass_on: PassStateless) -> None:
        self._server = server
        self._pass_on = pass_on
        # The SDK's result pipeline reads only the server (`_serialize` is private to the pinned
        # SDK, mcp==2.3.0); the connection and lifespan it is made with are not used there.
        self._runner = ServerRunner(server, None, None)  # type: ignore[arg-type]

    def take(
        self, message: Any, scope: dict[str, Any], headers: dict[str, str]
    ) -> StatelessCall | None:
        """The call if the lean path may answer this sessionless POST, else None (the SDK
        answers it). `headers`: lower-case names, the first of a repeated one (as the SDK's
        request reads them)."""
        version = headers.get("mcp-protocol-version")
        if version not in MODERN_PROTOCOL_VERSIONS or not isinstance(message, dict):
            return None
        params = message.get("params")
        request_id = message.get("id")
        if (
            message.get("method") != "tools/call"
            or message.get("jsonrpc") != "2.0"
            or len(message) != 4
            or not isinstance(request_id, str | int)
            or isinstance(request_id, bool)
            or not isinstance(params, dict)
            or "task" in params
            or not accepts_both(headers.get("accept", ""))
        ):
            return None
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            return None  # progress needs the event stream
        # The raw header lines (a folded map hides a repeat), only those it reads: the routing
        # headers, by name.
        routing = [(k.decode("latin-1"), "") for k, _ in scope["headers"] if k.lower() in _ROUTING]
        if find_duplicated_routing_header(routing) is not None:
            return None
        verdict = classify_inbound_request(message, headers=headers)
        if not isinstance(verdict, InboundModernRoute):
            return None
        if not self._params_agree(params, headers, scope):
            return None
        try:
            # The request surface of the version, then the handler's params model: the two
            # checks the SDK's kernel makes before it runs the handler.
            validate_client_request("tools/call", verdict.protocol_version, params)
            CallToolRequestParams.model_validate(params, by_name=False)
        except (ValidationError, KeyError, ValueError):
            return None
        try:
            capabilities = ClientCapabilities.model_validate(
                verdict.client_capabilities, by_name=False
            )
        except ValidationError:
            capabilities = None  # as the SDK's connection reads a mis-shaped one
        return StatelessCall(
            request_id,
            params,
            verdict.protocol_version,
            capabilities,
            scope.get("query_string", b"").decode("latin-1"),
            f"client-stateless-{next(_CALLS)}",
        )

    def _params_agree(self, params: Wire, headers: dict[str, str], scope: dict[str, Any]) -> bool:
        """The SDK's check of the `Mcp-Param-*` headers against the tool's schema, where it
        makes it (a tool it has no schema for, or a call with no arguments and no such headers,
        has nothing to check)."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            return True
        if arguments is not None and not isinstance(arguments, dict):
            return True
        if not arguments and not any(h.startswith(_MCP_PARAM) for h in headers):
            return True
        try:
            schema = self._server.get_tool_input_schema(name)
        except Exception:
            return False  # the SDK logs it and skips the check: its path says so
        if schema is None:
            return True
        # The raw header lines: a repeated Mcp-Param-* header is refused.
        return validate_mcp_param_headers(schema, arguments or {}, Headers(scope=scope)) is None

    async def answer(self, call: StatelessCall, receive: Any, send: Any) -> None:
        """Run a call `take` accepted and answer it; a client that goes away meanwhile cancels
        it (the round trip sets its request abandoned, which cancels it at the app). The
        request's own task waits for the client's disconnect while the app works, and the
        app's answer wakes it (web/mcpdoor/roundtrips.py, `Exchange.next_unless`)."""

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        try:
            outcome = await self._outcome(call, gone)
        except ClientGone:
            return  # nobody to answer
        error = outcome.get("error")
        status = ERROR_CODE_HTTP_STATUS.get(error["code"], 200) if error else 200
        body = response(call.request_id, outcome)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-length", str(len(body)).encode()),
                    (b"content-type", b"application/json"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _outcome(self, call: StatelessCall, gone: Gone) -> Wire:
        """The JSON-RPC answer's `result` or `error`, as the SDK's path words it."""
        try:
            result = await self._pass_on(call, gone)
            shaped = self._runner._serialize("tools/call", call.version, result)
        except ClientGone:
            raise
        except Exception as caught:
            return {"error": error_wire(modern_error_data(caught))}
        return {"result": shaped}
