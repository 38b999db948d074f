"""Guided tools: step-by-step data entry that asks the person (MCP elicitation) as it goes.

    guided_restock       which store, then which low-stock products to reorder and how many,
                         then a draft purchase order per supplier
    confirm_adjustment   a stock change; a large one is applied only once the person confirms

A client of the handshake era is asked with `elicitation/create` requests in the middle of the
call. A 2026-07-28 client has no such channel: the call answers `input_required` with the next
question, and the client sends the call again with the answer. The tool then runs again from
the start, and the answers given so far come back to it in `requestState` (they are the
client's own answers, so there is nothing in them the client could not have said anyway).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from data import Inventory, as_json
from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

LARGE_CHANGE = 50  # units: a change at least this large (either way) is confirmed first
GUIDED_TOOLS = ("guided_restock", "confirm_adjustment")


class _NeedInput(Exception):
    """A 2026-07-28 call must end here with a question; the retry brings the answer."""

    def __init__(self, result: InputRequiredResult) -> None:
        super().__init__("input required")
        self.result = result


class Person:
    """The person behind the call, asked in whichever way the call's protocol era allows."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self._answers: dict[str, Any] = {}  # 2026-07-28: the answers so far, by question key
        if self._modern:
            if ctx.request_state:
                self._answers = json.loads(ctx.request_state)
            for key, answer in (ctx.input_responses or {}).items():
                self._answers[key] = answer.model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )

    async def ask(self, key: str, message: str, schema: dict[str, Any]) -> ElicitResult:
        if not self._modern:
            ctx = self._ctx
            return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        if key in self._answers:
            return ElicitResult.model_validate(self._answers[key])
        params = ElicitRequestFormParams(message=message, requested_schema=schema)
        raise _NeedInput(
            InputRequiredResult(
                input_requests={key: ElicitRequest(params=params)},
                request_state=json.dumps(self._answers),
            )
        )


def _said(text: str, structured: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def guided_tools(
    inventory: Inventory, announce: Callable[[Context, int], Awaitable[str]]
) -> list[Callable[..., Awaitable[Any]]]:
    """The guided tools over `inventory`; `announce` tells clients a store's stock changed."""

    async def guided_restock(
        ctx: Context,
        storeId: Annotated[int | None, Field(description="The store; asked when not given")] = None,
    ) -> CallToolResult | InputRequiredResult:
        """Guided restock: asks which store (unless given), then which of its low-stock products
        to reorder and how many, then drafts a purchase order per supplier (nothing is sent)."""
        try:
            return await _restock(Person(ctx), storeId)
        except _NeedInput as need:
            return need.result

    async def _restock(person: Person, store_id: int | None) -> CallToolResult:
        if store_id is None:
            choices = [
                {"const": str(s.id), "title": f"{s.name} ({s.city}, {s.state})"}
                for s in inventory.stores.values()
            ]
            answer = await person.ask(
                "store",
                "Which store should be restocked?",
                {
                    "type": "object",
                    "properties": {
                        "storeId": {"type": "string", "title": "Store", "oneOf": choices}
                    },
                    "required": ["storeId"],
                },
            )
            if answer.action != "accept" or not answer.content:
                return _said(f"Restock stopped: no store was chosen ({answer.action}).")
            store_id = int(str(answer.content["storeId"]))
        store = inventory.store(store_id)
        low = inventory.find_items(store_id, low_only=True)
        if not low:
            return _said(f"Nothing at {store.name} is at or below its reorder threshold.")
        fields = {}
        for item in low:
            product = inventory.product(item.product_id)
            fields[f"p{product.id}"] = {
                "type": "integer",
                "title": f"{product.name} ({product.sku})",
                "description": (
                    f"{item.quantity_on_hand} {product.unit_of_measure} on hand, reorder at"
                    f" {item.reorder_threshold}; units to order, 0 to skip"
                ),
                "minimum": 0,
                "default": max(item.reorder_threshold * 2 - item.quantity_on_hand, 0),
            }
        answer = await person.ask(
            "quantities",
            f"{len(low)} products are low at {store.name}. How many of each should be ordered?",
            {"type": "object", "properties": fields},
        )
        if answer.action != "accept":
            return _said(f"Restock of {store.name} stopped ({answer.action}): no order drafted.")
        chosen = answer.content or {}
        orders: dict[int, dict[str, Any]] = {}
        for item in low:
            quantity = int(chosen.get(f"p{item.product_id}", 0) or 0)
            if quantity <= 0:
                continue
            product = inventory.product(item.product_id)
            supplier = inventory.supplier(product.supplier_id)
            order = orders.setdefault(
                supplier.id,
                {"supplier": as_json(supplier), "lines": [], "total": 0.0},
            )
            line_total = round(quantity * product.unit_price, 2)
            order["lines"].append(
                {
                    "productId": product.id,
                    "sku": product.sku,
                    "productName": product.name,
                    "quantity": quantity,
                    "unitPrice": product.unit_price,
                    "lineTotal": line_total,
                }
            )
            order["total"] = round(order["total"] + line_total, 2)
        if not orders:
            return _said(f"No products were chosen: no order drafted for {store.name}.")
        draft = {
            "status": "draft",
            "store": as_json(store),
            "orders": list(orders.values()),
            "grandTotal": round(sum(o["total"] for o in orders.values()), 2),
        }
        lines = [
            f"Draft purchase order for {store.name}: {len(orders)} supplier(s),"
            f" total ${draft['grandTotal']:,.2f}."
        ]
        for order in orders.values():
            items = ", ".join(
                f"{line['quantity']} x {line['productName']}" for line in order["lines"]
            )
            lines.append(f"- {order['supplier']['name']}: {items} (${order['total']:,.2f})")
        return _said("\n".join(lines), draft)

    async def confirm_adjustment(
        storeId: Annotated[int, Field(description="Store id (see get_stores)")],
        productId: Annotated[int, Field(description="Product id (see get_products)")],
        delta: Annotated[int, Field(description="Units to add (positive) or remove (negative)")],
        ctx: Context,
        reason: Annotated[
            str | None, Field(description="Why, e.g. delivery, sale, spoilage")
        ] = None,
    ) -> CallToolResult | InputRequiredResult:
        """Add or remove units of a product at a store like adjust_stock, but a large change
        (50 units or more either way) is applied only after the person confirms it."""
        try:
            return await _adjust(Person(ctx), ctx, storeId, productId, delta, reason)
        except _NeedInput as need:
            return need.result

    async def _adjust(
        person: Person, ctx: Context, store_id: int, product_id: int, delta: int, reason: str | None
    ) -> CallToolResult:
        store, product = inventory.store(store_id), inventory.product(product_id)
        [item] = inventory.find_items(store_id, product_id) or [None]
        before = item.quantity_on_hand if item is not None else 0
        if abs(delta) >= LARGE_CHANGE:
            answer = await person.ask(
                "confirm",
                f"Change {product.name} at {store.name} by {delta:+d} units"
                f" (from {before} to {max(before + delta, 0)})? That is a large stock change.",
                {
                    "type": "object",
                    "properties": {
                        "confirm": {
                            "type": "boolean",
                            "title": "Apply this change",
                            "default": False,
                        },
                    },
                    "required": ["confirm"],
                },
            )
            if answer.action != "accept" or not (answer.content or {}).get("confirm"):
                why = "not confirmed" if answer.action == "accept" else answer.action
                return _said(
                    f"Not applied ({why}): {product.name} at {store.name} stays at {before}.",
                    {"applied": False, "action": answer.action, "quantityOnHand": before},
                )
        changed = inventory.adjust(store_id, product_id, delta)
        await announce(ctx, store_id)
        return _said(
            f"Applied: {product.name} at {store.name} is now {changed.quantity_on_hand}"
            f" ({delta:+d}{', ' + reason if reason else ''}).",
            {"applied": True, "item": inventory.row(changed), "previousQuantity": before},
        )

    return [guided_restock, confirm_adjustment]
