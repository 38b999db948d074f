"""Grocery Inventory: the bundled example MCP App (the source documents' GroceryInventory.Api).

Tools, resources, resource templates, prompts and completions over an in-memory grocery chain,
plus an interactive store dashboard (an MCP Apps `ui://` resource).

    python3 server.py                                   # stdio (what the manifest starts)
    python3 server.py --http --port 8765 [--host H]     # Streamable HTTP at http://H:8765/mcp

`--port 0` picks a free port; the bound URL is logged to stderr as `listening on <url>`.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import trio
from data import GLOSSARY, Inventory, InventoryError, as_json
from guided import guided_tools
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.apps import Apps
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    ToolAnnotations,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

log = logging.getLogger("grocery")

HERE = Path(__file__).resolve().parent
DASHBOARD_URI = "ui://grocery/store-dashboard.html"
SHEET_URI = "ui://grocery/inventory-sheet.html"
# The file entry point (OpenAI MCP extensions): a host with a workspace offers this app's sheet
# for its .csv files, and opens one by calling `open_inventory_file` with an opaque URI.
SHEET_ENTRYPOINTS = {"openai/ui": {"entrypoints": [{"type": "file", "extensions": [".csv"]}]}}
STORE_SUMMARY_URI = "inventory://stores/{storeId}/summary"
PRODUCT_DETAILS_URI = "inventory://products/{productId}/details"

inventory = Inventory()
apps = Apps()

# Typed arguments shared by several tools. Wire names are camelCase like the source's API; the
# SDK calls tools with the wire names as keywords, so the Python parameters carry them too.
StoreId = Annotated[int, Field(description="Store id (see get_stores)")]
ProductId = Annotated[int, Field(description="Product id (see get_products)")]
OptionalStoreId = Annotated[int | None, Field(description="Only this store (see get_stores)")]
OptionalProductId = Annotated[int | None, Field(description="Only this product")]
# Advertised as `minimum: 0`, but checked by the inventory rather than by pydantic, whose
# multi-line validation report is a poor message for a model to act on.
Count = Annotated[int, Field(json_schema_extra={"minimum": 0})]

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def reports_inventory_errors(fn: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """Turn `InventoryError` into `ToolError`: the SDK hides other exceptions' text from callers."""

    @functools.wraps(fn)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await fn(*args, **kwargs)
        except InventoryError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


# Tools are `async def` on purpose: the SDK runs plain functions in worker threads, and the
# inventory is shared, unlocked state that must only change on the event loop.


async def get_categories(
    id: Annotated[int | None, Field(description="Only this category")] = None,
) -> dict[str, Any]:
    """List product categories, or one category by id."""
    found = [inventory.category(id)] if id is not None else inventory.categories.values()
    return {"categories": [as_json(c) for c in found]}


async def get_products(
    id: OptionalProductId = None,
    categoryId: Annotated[int | None, Field(description="Only products in this category")] = None,
    supplierId: Annotated[int | None, Field(description="Only products from this supplier")] = None,
) -> dict[str, Any]:
    """List products (SKU, name, unit price, unit), filtered by id, category or supplier."""
    products = inventory.find_products(categoryId, supplierId)
    if id is not None:
        inventory.product(id)
        products = [p for p in products if p.id == id]
    return {"products": [as_json(p) for p in products]}


async def get_suppliers(
    id: Annotated[int | None, Field(description="Only this supplier")] = None,
) -> dict[str, Any]:
    """List suppliers with their contact details, or one supplier by id."""
    found = [inventory.supplier(id)] if id is not None else inventory.suppliers.values()
    return {"suppliers": [as_json(s) for s in found]}


async def get_stores(
    id: Annotated[int | None, Field(description="Only this store")] = None,
) -> dict[str, Any]:
    """List the chain's stores (name, city, state), or one store by id."""
    found = [inventory.store(id)] if id is not None else inventory.stores.values()
    return {"stores": [as_json(s) for s in found]}


async def get_inventory(
    storeId: OptionalStoreId = None, productId: OptionalProductId = None
) -> dict[str, Any]:
    """List inventory rows (quantity on hand, reorder threshold) by store and/or product."""
    return {"items": [inventory.row(item) for item in inventory.find_items(storeId, productId)]}


async def get_low_stock(storeId: OptionalStoreId = None) -> dict[str, Any]:
    """List inventory rows at or below their reorder threshold, optionally for one store."""
    rows = [inventory.row(item) for item in inventory.find_items(storeId, low_only=True)]
    return {"count": len(rows), "items": rows}


async def set_inventory(
    storeId: StoreId,
    productId: ProductId,
    quantityOnHand: Annotated[Count, Field(description="Units on hand (absolute, 0 or more)")],
    reorderThreshold: Annotated[Count, Field(description="Reorder at or below this (0 or more)")],
    ctx: Context,
) -> dict[str, Any]:
    """Create or replace a store's inventory row for a product with absolute values."""
    item, created = inventory.set_item(storeId, productId, quantityOnHand, reorderThreshold)
    await _announce_store_change(ctx, storeId)
    return {"created": created, "item": inventory.row(item)}


async def adjust_stock(
    storeId: StoreId,
    productId: ProductId,
    delta: Annotated[int, Field(description="Units to add (positive) or remove (negative)")],
    ctx: Context,
    reason: Annotated[str | None, Field(description="Why, e.g. delivery, sale, spoilage")] = None,
) -> dict[str, Any]:
    """Add or remove units of a product at a store (never below 0); announces the change as
    notifications/resources/updated for inventory://stores/{storeId}/summary."""
    item = inventory.adjust(storeId, productId, delta)
    log.info("stock %s/%s %+d (%s)", storeId, productId, delta, reason or "no reason given")
    uri = await _announce_store_change(ctx, storeId)
    return {
        "item": inventory.row(item),
        "previousQuantity": item.quantity_on_hand - delta,
        "delta": delta,
        "reason": reason,
        "updatedResource": uri,
    }


async def _announce_store_change(ctx: Context, store_id: int) -> str:
    """Tell clients the store's summary resource changed, in whichever way their era allows.

    2026-07-28 clients hear it on their `subscriptions/listen` streams (the bus). A handshake-era
    caller gets a plain notification on its own connection; the SDK keeps no registry of other
    handshake sessions to reach (over stdio there is only one). Nobody may be listening, and a
    notification is never worth failing the tool call for.
    """
    uri = STORE_SUMMARY_URI.replace("{storeId}", str(store_id))
    try:
        await ctx.notify_resource_updated(uri)
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_resource_updated(uri)
    except Exception:
        log.warning("could not send resources/updated for %s", uri, exc_info=True)
    return uri


async def show_store_inventory_dashboard(storeId: OptionalStoreId = None) -> CallToolResult:
    """Show the interactive inventory dashboard for one store, or for every store."""
    data = inventory.dashboard(storeId)
    totals = data["totals"]
    scope = inventory.store(storeId).name if storeId is not None else "all stores"
    low = [f"{row['productName']} at {row['storeName']}" for row in data["rows"] if row["lowStock"]]
    # The text is what a model (or a host without MCP Apps) reads; the view gets the full data.
    text = (
        f"Inventory dashboard for {scope}: {totals['rows']} rows, {totals['units']} units, "
        f"stock value ${totals['value']:,.2f}, {totals['lowStock']} at or below reorder threshold"
        + (f" ({'; '.join(low[:10])}{'; ...' if len(low) > 10 else ''})." if low else ".")
    )
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


async def get_store_dashboard_data(storeId: OptionalStoreId = None) -> dict[str, Any]:
    """The dashboard's data for one store or all stores (the dashboard view refreshes with it)."""
    return inventory.dashboard(storeId)


class FileInput(BaseModel):
    """A file a host opened in this app: its name, and the opaque URI it is read and saved
    through (never a path)."""

    name: Annotated[str, Field(min_length=1, description="The file's name, with its extension")]
    resourceUri: Annotated[str, Field(min_length=1, description="The host's URI for the file")]


async def open_inventory_file(file: FileInput) -> CallToolResult:
    """Open a workspace .csv (a stock count, an order draft) in the inventory sheet, to view and
    edit it; the sheet reads and saves it through the host."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"Opened {file.name} in the inventory sheet.")],
        structured_content={"file": {"name": file.name}},
    )


class SessionCounter:
    """Counts client sessions: one per `initialize` (handshake era) or `server/discover` (2026).

    Lets tests (and operators) check that a host reuses one upstream session instead of
    reconnecting per call. A middleware sees every request before the SDK handles it.
    """

    def __init__(self) -> None:
        self.by_method = {"initialize": 0, "server/discover": 0}
        self.started_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method in self.by_method and ctx.request_id is not None:
            self.by_method[ctx.method] += 1
        return await call_next(ctx)


sessions = SessionCounter()


async def get_server_stats(ctx: Context) -> dict[str, Any]:
    """How many client sessions this server process has seen, and its process id."""
    return {
        "sessions": sum(sessions.by_method.values()),
        "initialize": sessions.by_method["initialize"],
        "discover": sessions.by_method["server/discover"],
        "pid": os.getpid(),
        "startedAt": sessions.started_at,
        "protocolVersion": ctx.protocol_version,
    }


async def get_caller_session(ctx: Context) -> dict[str, Any]:
    """Which chat session this call came from (its `_meta.sessionId`), or null: the host gives
    the agent's calls and those of the views a chat opened the same id."""
    meta: Any = ctx.request_context.meta or {}
    if not isinstance(meta, dict):
        meta = meta.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"sessionId": meta.get("sessionId")}


# --- Registration -------------------------------------------------------------------------------

apps.tool(resource_uri=DASHBOARD_URI, visibility=["model", "app"], annotations=READ_ONLY)(
    reports_inventory_errors(show_store_inventory_dashboard)
)
# App-only: the view refreshes through it; a model has show_store_inventory_dashboard instead.
apps.tool(resource_uri=DASHBOARD_URI, visibility=["app"], annotations=READ_ONLY)(
    reports_inventory_errors(get_store_dashboard_data)
)
apps.add_html_resource(
    DASHBOARD_URI,
    (HERE / "store-dashboard.html").read_text(encoding="utf-8"),
    name="store-dashboard",
    title="Store inventory dashboard",
    description="Interactive multi-store inventory dashboard (MCP App view)",
    prefers_border=True,
)

# App-only: a file viewer opened by a person from a file, never by a model (it has no file URI).
apps.tool(
    resource_uri=SHEET_URI,
    visibility=["app"],
    annotations=READ_ONLY,
    meta=SHEET_ENTRYPOINTS,
    title="Inventory sheet",
    description=inspect.cleandoc(open_inventory_file.__doc__ or ""),
)(open_inventory_file)
apps.add_html_resource(
    SHEET_URI,
    (HERE / "inventory-sheet.html").read_text(encoding="utf-8"),
    name="inventory-sheet",
    title="Inventory sheet",
    description="View and edit a workspace .csv (stock counts, order drafts), saved safely",
    prefers_border=True,
)

server = MCPServer(
    "grocery-inventory",
    title="Grocery Inventory Dashboard",
    version="1.0.0",
    instructions=(
        "Multi-store grocery inventory. Look up ids with get_stores/get_products, check stock "
        "with get_inventory/get_low_stock, change it with set_inventory/adjust_stock, and show "
        "show_store_inventory_dashboard to a user who wants to see it."
    ),
    extensions=[apps],
)
server.middleware.append(sessions)

for tool, hints in [
    (get_categories, READ_ONLY),
    (get_products, READ_ONLY),
    (get_suppliers, READ_ONLY),
    (get_stores, READ_ONLY),
    (get_inventory, READ_ONLY),
    (get_low_stock, READ_ONLY),
    (set_inventory, ToolAnnotations(destructive_hint=False, idempotent_hint=True)),
    (adjust_stock, ToolAnnotations(destructive_hint=False, idempotent_hint=False)),
    (get_server_stats, READ_ONLY),
    (get_caller_session, READ_ONLY),
]:
    # cleandoc: the SDK publishes a docstring verbatim, indentation included.
    description = inspect.cleandoc(tool.__doc__ or "")
    server.add_tool(reports_inventory_errors(tool), description=description, annotations=hints)

# Guided tools ask the person as they go (elicitation): their results are built by hand.
for tool in guided_tools(inventory, _announce_store_change):
    server.add_tool(
        reports_inventory_errors(tool),
        description=inspect.cleandoc(tool.__doc__ or ""),
        annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False),
        structured_output=False,
    )


# --- Resource templates -------------------------------------------------------------------------


@server.resource(
    STORE_SUMMARY_URI,
    name="store-summary",
    title="Store inventory summary",
    description="Per-store inventory summary: units, stock value and low-stock rows",
    mime_type="application/json",
)
async def store_summary(storeId: int) -> str:
    try:
        return json.dumps(inventory.store_summary(storeId), indent=2)
    except InventoryError as exc:
        raise ResourceNotFoundError(str(exc)) from exc


@server.resource(
    PRODUCT_DETAILS_URI,
    name="product-details",
    title="Product details",
    description="A product with its category, supplier and stock level at every store",
    mime_type="application/json",
)
async def product_details(productId: int) -> str:
    try:
        return json.dumps(inventory.product_details(productId), indent=2)
    except InventoryError as exc:
        raise ResourceNotFoundError(str(exc)) from exc


# --- Prompts ------------------------------------------------------------------------------------


def _bad_argument(message: str) -> MCPError:
    # The SDK replaces any other exception from a prompt with "Error rendering prompt <name>";
    # an MCPError reaches the client as it is.
    return MCPError(code=INVALID_PARAMS, message=message)


def _prompt_input(fetch: Callable[[], dict[str, Any]]) -> str:
    try:
        return json.dumps(fetch(), indent=2)
    except InventoryError as exc:
        raise _bad_argument(str(exc)) from exc


@server.prompt(title="Analyze store performance")
async def analyze_store_performance(
    storeId: Annotated[str, Field(description="Store id (see get_stores)")],
) -> str:
    """Analyze a store's inventory health: coverage, low-stock hotspots, value at risk, actions."""
    summary = _prompt_input(lambda: inventory.store_summary(_number("storeId", storeId)))
    return (
        "You are a retail inventory analyst. Analyze this store's inventory health.\n\n"
        f"Store summary (inventory://stores/{storeId}/summary):\n{summary}\n\n"
        "Cover: 1) catalog coverage (products stocked vs. in the catalog); 2) low-stock "
        "hotspots by category; 3) stock value at risk from items at or below their reorder "
        "threshold; 4) three to five concrete actions, most urgent first."
    )


@server.prompt(title="Draft supplier order")
async def draft_supplier_order(
    supplierId: Annotated[str, Field(description="Supplier id (see get_suppliers)")],
    storeId: Annotated[str | None, Field(description="Only this store's needs")] = None,
    urgency: Annotated[str, Field(description="routine, urgent or emergency")] = "routine",
) -> str:
    """Draft a purchase order to a supplier from low-stock data, at a chosen urgency level."""
    supplier_id = _number("supplierId", supplierId)
    store_id = _number("storeId", storeId) if storeId else None
    if urgency not in URGENCIES:
        raise _bad_argument(f"urgency must be one of {', '.join(URGENCIES)}, not {urgency!r}")

    def needs() -> dict[str, Any]:
        supplier = inventory.supplier(supplier_id)
        rows = [
            inventory.row(item)
            for item in inventory.find_items(store_id, low_only=True)
            if inventory.products[item.product_id].supplier_id == supplier_id
        ]
        return {"supplier": as_json(supplier), "lowStockRows": rows}

    data = _prompt_input(needs)
    where = f"store {store_id}" if store_id is not None else "every store"
    return (
        f"Draft a purchase order for the supplier below, covering {where}. "
        f"Urgency: {urgency} ({URGENCIES[urgency]}).\n\n"
        f"Supplier and its products at or below the reorder threshold:\n{data}\n\n"
        "For each line give SKU, product, store, quantity to order (enough to bring stock "
        "comfortably above the threshold) and estimated cost at the unit price; then a total. "
        "Match the tone and the requested delivery date to the urgency. "
        "If nothing is low, say so and suggest whether an order is needed at all."
    )


@server.prompt(title="Explain inventory term")
async def explain_inventory_term(
    term: Annotated[str, Field(description="The term, e.g. safety stock, FIFO, shrinkage")],
) -> str:
    """Explain an inventory management term in plain language."""
    known = next((k for k in GLOSSARY if k.lower() == term.strip().lower()), None)
    hint = f"\nA one-line definition to build on: {known}: {GLOSSARY[known]}.\n" if known else ""
    return (
        f"Explain the inventory management term '{term}' in plain language for a grocery store "
        f"manager.{hint}\nGive a short definition, why it matters for a grocery store (think "
        "perishables and multiple stores), a worked example with numbers, and one common mistake."
    )


URGENCIES = {
    "routine": "next regular delivery",
    "urgent": "within 48 hours",
    "emergency": "same or next day, stock is out or about to be",
}


def _number(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise _bad_argument(f"{name} must be a number, not {value!r}") from None


# --- Completions --------------------------------------------------------------------------------


def _matching(candidates: list[tuple[str, str]], typed: str) -> Completion:
    """Values whose id or label starts with what was typed (case-insensitive)."""
    typed = typed.strip().lower()
    values = [
        v for v, label in candidates if v.startswith(typed) or label.lower().startswith(typed)
    ]
    return Completion(values=values[:100], total=len(values), has_more=len(values) > 100)


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    stores = [(str(s.id), s.name) for s in inventory.stores.values()]
    choices: dict[tuple[str, str], list[tuple[str, str]]] = {
        ("analyze_store_performance", "storeId"): stores,
        ("draft_supplier_order", "storeId"): stores,
        ("draft_supplier_order", "supplierId"): [
            (str(s.id), s.name) for s in inventory.suppliers.values()
        ],
        ("draft_supplier_order", "urgency"): [(u, u) for u in URGENCIES],
        ("explain_inventory_term", "term"): [(t, t) for t in GLOSSARY],
        (STORE_SUMMARY_URI, "storeId"): stores,
        (PRODUCT_DETAILS_URI, "productId"): [
            (str(p.id), p.name) for p in inventory.products.values()
        ],
    }
    key = ref.name if isinstance(ref, PromptReference) else ref.uri
    candidates = choices.get((key, argument.name))
    return _matching(candidates, argument.value) if candidates is not None else None


# --- Transports ---------------------------------------------------------------------------------


class _StdinLines:
    """stdin as async text lines, read in a worker thread that a cancellation may abandon.

    The SDK's own stdin reader blocks in a thread that cannot be cancelled, so a SIGTERM would
    wait for the next input line. Here the blocked read is abandoned instead. It is an `os.read`
    on fd 0, not `sys.stdin`: a thread left inside `sys.stdin`'s buffered reader holds its lock,
    and the interpreter aborts at shutdown when it cannot take that lock.
    """

    def __init__(self) -> None:
        self._pending = b""

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._pending:
            chunk = await trio.to_thread.run_sync(os.read, 0, 65536, abandon_on_cancel=True)
            if not chunk:
                if not self._pending:
                    raise StopAsyncIteration
                chunk = b"\n"  # a last line without its newline still counts
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("utf-8", errors="replace") + "\n"


async def _on_signal(shut_down: Callable[[], object]) -> None:
    """Wait for SIGTERM or SIGINT (a supervisor's stop, or Ctrl-C), then begin the shutdown."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("%s received, shutting down", signal.Signals(signum).name)
            shut_down()
            return


async def serve_stdio() -> None:
    # What `MCPServer.run_stdio_async` does, with a stdin reader that a signal can interrupt.
    # The SDK still claims stdout (fd 1 points at stderr while serving), so stray prints from
    # anywhere in the process cannot corrupt the JSON-RPC stream.
    lowlevel = server._lowlevel_server  # the SDK's own Client reaches it the same way
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, nursery.cancel_scope.cancel)
        async with stdio_server(stdin=_StdinLines()) as (read_stream, write_stream):  # type: ignore[arg-type]
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        log.info("stdin closed, shutting down")
        nursery.cancel_scope.cancel()


def _security(host: str) -> TransportSecuritySettings | None:
    """Host/Origin checks against DNS rebinding for loopback binds, as the SDK does by default."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


async def serve_http(host: str, port: int) -> None:
    """Streamable HTTP at /mcp on Hypercorn's Trio worker (the SDK's `run` needs uvicorn)."""
    manager = StreamableHTTPSessionManager(
        server._lowlevel_server,
        # Plain JSON responses: cheaper than an SSE stream per POST, and notifications that are
        # not tied to a request still reach a client on its GET stream.
        json_response=True,
        security_settings=_security(host),
    )

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] != "http":
            return  # no websockets here; Hypercorn refuses the upgrade
        elif scope["path"].rstrip("/") == "/mcp":
            await manager.handle_request(scope, receive, send)
        else:
            body = b"Not found: the MCP endpoint is /mcp\n"
            await send(
                {
                    "type": "http.response.start",
                    "status": 404,
                    "headers": [
                        (b"content-type", b"text/plain"),
                        (b"content-length", b"%d" % len(body)),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})

    config = HypercornConfig()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # our stderr format, not a second one
    # Open GET streams would otherwise hold a shutdown for the default graceful timeout.
    config.graceful_timeout = 1.0
    # Clients reuse an idle connection for up to 5 s (httpx's keepalive_expiry, so the SDK's
    # client): closing idle ones at Hypercorn's default 5 s races them, and a request sent just
    # as the server closes is lost ("Server disconnected without sending a response").
    config.keep_alive_timeout = 75.0

    stop = trio.Event()
    async with manager.run(), trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, stop.set)
        binds = await nursery.start(
            functools.partial(hypercorn_serve, app, config, shutdown_trigger=stop.wait)
        )
        for bind in binds:
            log.info("listening on %s/mcp", bind)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (8765; 0 = any free)")
    args = parser.parse_args(argv)
    # force: `MCPServer()` already installed its own (rich) handler. Ours is plain and on stderr,
    # because in stdio mode stdout carries JSON-RPC and nothing else.
    logging.basicConfig(
        force=True,
        stream=sys.stderr,
        level=os.environ.get("GROCERY_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.http:
        trio.run(serve_http, args.host, args.port)
    else:
        trio.run(serve_stdio)


if __name__ == "__main__":
    main()
