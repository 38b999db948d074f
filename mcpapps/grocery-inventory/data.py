"""The grocery chain's data: seed records and the in-memory inventory service.

Modelled on the source documents' GroceryInventory.Api (Category, Product, Supplier, Store,
InventoryItem and an in-memory service with seed data). Nothing here knows about MCP: ids that
do not exist and impossible stock levels raise `InventoryError`, whose message is written for
the person (or model) who sent the request.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any


class InventoryError(ValueError):
    """A request the inventory cannot satisfy; the message says why and what would work."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def as_json(record: Any) -> dict[str, Any]:
    """A record as the wire shows it: camelCase keys, as in the source's JSON API."""
    return {_camel(key): value for key, value in asdict(record).items()}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Category:
    id: int
    name: str


@dataclass(frozen=True)
class Supplier:
    id: int
    name: str
    contact_email: str
    phone: str


@dataclass(frozen=True)
class Product:
    id: int
    sku: str
    name: str
    category_id: int
    supplier_id: int
    unit_price: float
    unit_of_measure: str


@dataclass(frozen=True)
class Store:
    id: int
    name: str
    city: str
    state: str


@dataclass
class InventoryItem:
    store_id: int
    product_id: int
    quantity_on_hand: int
    reorder_threshold: int
    last_updated: str

    @property
    def is_low(self) -> bool:
        return self.quantity_on_hand <= self.reorder_threshold


CATEGORIES = [
    Category(1, "Produce"),
    Category(2, "Dairy & Eggs"),
    Category(3, "Bakery"),
    Category(4, "Meat & Seafood"),
    Category(5, "Pantry"),
    Category(6, "Beverages"),
    Category(7, "Frozen"),
]

SUPPLIERS = [
    Supplier(1, "Green Valley Farms", "orders@greenvalleyfarms.example", "+1-503-555-0141"),
    Supplier(2, "Sunrise Dairy Co-op", "sales@sunrisedairy.example", "+1-541-555-0178"),
    Supplier(3, "Hearthstone Bakery Supply", "wholesale@hearthstone.example", "+1-206-555-0119"),
    Supplier(
        4, "Coastal Fresh Meats & Seafood", "dispatch@coastalfresh.example", "+1-360-555-0163"
    ),
    Supplier(
        5, "Pantry Wholesale Distributors", "accounts@pantrywholesale.example", "+1-916-555-0102"
    ),
    Supplier(6, "Polar Frozen Foods", "service@polarfrozen.example", "+1-208-555-0187"),
]

PRODUCTS = [
    Product(1, "PRD-APL-GALA", "Gala Apples", 1, 1, 1.99, "lb"),
    Product(2, "PRD-BAN-ORG", "Organic Bananas", 1, 1, 0.79, "lb"),
    Product(3, "PRD-SPN-BAG", "Baby Spinach 5 oz", 1, 1, 3.49, "bag"),
    Product(4, "DRY-MLK-2PC", "2% Milk, 1 gal", 2, 2, 4.29, "each"),
    Product(5, "DRY-EGG-LG12", "Large Eggs, dozen", 2, 2, 3.99, "dozen"),
    Product(6, "DRY-YOG-GRK", "Greek Yogurt 32 oz", 2, 2, 5.49, "each"),
    Product(7, "BKY-SOUR-LF", "Sourdough Loaf", 3, 3, 5.99, "each"),
    Product(8, "BKY-BAG-6PK", "Plain Bagels, 6-pack", 3, 3, 4.49, "pack"),
    Product(9, "MSF-CHK-BRST", "Chicken Breast", 4, 4, 6.99, "lb"),
    Product(10, "MSF-SAL-ATL", "Atlantic Salmon Fillet", 4, 4, 11.99, "lb"),
    Product(11, "PAN-RICE-JAS", "Jasmine Rice 5 lb", 5, 5, 8.99, "bag"),
    Product(12, "PAN-PST-PEN", "Penne Pasta 1 lb", 5, 5, 1.79, "box"),
    Product(13, "BEV-COF-MED", "Medium Roast Coffee 12 oz", 6, 5, 9.49, "bag"),
    Product(14, "BEV-OJ-52", "Orange Juice 52 oz", 6, 2, 4.99, "each"),
    Product(15, "FRZ-PEA-16", "Frozen Peas 16 oz", 7, 6, 2.29, "bag"),
    Product(16, "FRZ-PIZ-MAR", "Margherita Pizza", 7, 6, 7.99, "each"),
]

STORES = [
    Store(1, "Downtown Market", "Portland", "OR"),
    Store(2, "Riverside Grocers", "Sacramento", "CA"),
    Store(3, "Hillcrest Fresh", "Seattle", "WA"),
    Store(4, "Lakeside Foods", "Boise", "ID"),
]

# product id -> (reorder threshold, on-hand quantity at stores 1..4); None = not stocked there.
# A few rows start at or below their threshold so low-stock alerts have something to show.
_SEED_STOCK: dict[int, tuple[int, tuple[int | None, ...]]] = {
    1: (40, (120, 35, 88, 64)),
    2: (60, (210, 190, 45, 150)),
    3: (20, (18, 42, 37, None)),
    4: (30, (75, 28, 90, 55)),
    5: (25, (60, 48, 12, 33)),
    6: (15, (22, 30, 19, 9)),
    7: (12, (10, 24, 31, None)),
    8: (10, (26, 14, 20, 11)),
    9: (25, (48, 52, 20, 38)),
    10: (10, (14, 8, 25, None)),
    11: (15, (40, 36, 22, 18)),
    12: (30, (95, 80, 64, 27)),
    13: (12, (30, 11, 44, 16)),
    14: (20, (38, 42, 26, 19)),
    15: (20, (55, 47, 30, 24)),
    16: (10, (18, 9, 22, 14)),
}

# The glossary behind `explain_inventory_term` and its completions.
GLOSSARY = {
    "reorder point": "the stock level at which a new order should be placed",
    "reorder threshold": "this app's name for the reorder point of one store's product",
    "safety stock": "extra units held to absorb demand spikes and late deliveries",
    "lead time": "the time between placing an order and receiving it",
    "stockout": "a product that has run out on the shelf and in the back room",
    "shrinkage": "stock lost to spoilage, damage, theft or miscounting",
    "inventory turnover": "how many times a product's stock is sold and replaced in a period",
    "days of supply": "how long the stock on hand lasts at the current rate of sales",
    "par level": "the quantity a store aims to have on hand after each delivery",
    "FIFO": "first in, first out: sell the oldest stock first (vital for perishables)",
    "SKU": "stock keeping unit: the code that identifies one sellable product",
    "purchase order": "a buyer's formal order to a supplier for products, quantities and prices",
    "cycle count": "counting a small part of the inventory regularly instead of all at once",
}


def _ids(records: Iterable[Any]) -> str:
    return ", ".join(str(record.id) for record in records)


class Inventory:
    """The in-memory inventory service: lookups, queries and the two stock mutations."""

    def __init__(self) -> None:
        self.categories = {c.id: c for c in CATEGORIES}
        self.suppliers = {s.id: s for s in SUPPLIERS}
        self.products = {p.id: p for p in PRODUCTS}
        self.stores = {s.id: s for s in STORES}
        stamp = _now()
        self.items: dict[tuple[int, int], InventoryItem] = {
            (store.id, product_id): InventoryItem(store.id, product_id, quantity, threshold, stamp)
            for product_id, (threshold, quantities) in _SEED_STOCK.items()
            for store, quantity in zip(STORES, quantities, strict=True)
            if quantity is not None
        }

    # Lookups: an unknown id names the ids that do exist, so the caller can correct itself.

    def category(self, category_id: int) -> Category:
        if category_id not in self.categories:
            raise InventoryError(
                f"Unknown category id {category_id}; known ids: {_ids(self.categories.values())}"
            )
        return self.categories[category_id]

    def supplier(self, supplier_id: int) -> Supplier:
        if supplier_id not in self.suppliers:
            raise InventoryError(
                f"Unknown supplier id {supplier_id}; known ids: {_ids(self.suppliers.values())}"
            )
        return self.suppliers[supplier_id]

    def product(self, product_id: int) -> Product:
        if product_id not in self.products:
            raise InventoryError(
                f"Unknown product id {product_id}; known ids: {_ids(self.products.values())}"
            )
        return self.products[product_id]

    def store(self, store_id: int) -> Store:
        if store_id not in self.stores:
            raise InventoryError(
                f"Unknown store id {store_id}; known ids: {_ids(self.stores.values())}"
            )
        return self.stores[store_id]

    # Queries

    def find_products(
        self, category_id: int | None = None, supplier_id: int | None = None
    ) -> list[Product]:
        if category_id is not None:
            self.category(category_id)
        if supplier_id is not None:
            self.supplier(supplier_id)
        return [
            p
            for p in self.products.values()
            if category_id in (None, p.category_id) and supplier_id in (None, p.supplier_id)
        ]

    def find_items(
        self, store_id: int | None = None, product_id: int | None = None, low_only: bool = False
    ) -> list[InventoryItem]:
        if store_id is not None:
            self.store(store_id)
        if product_id is not None:
            self.product(product_id)
        return [
            item
            for (s, p), item in sorted(self.items.items())
            if store_id in (None, s) and product_id in (None, p) and (item.is_low or not low_only)
        ]

    def row(self, item: InventoryItem) -> dict[str, Any]:
        """An inventory row joined with its store, product and category, as views show it."""
        product = self.products[item.product_id]
        return {
            **as_json(item),
            "storeName": self.stores[item.store_id].name,
            "sku": product.sku,
            "productName": product.name,
            "category": self.categories[product.category_id].name,
            "supplierId": product.supplier_id,
            "unitPrice": product.unit_price,
            "unitOfMeasure": product.unit_of_measure,
            "stockValue": round(item.quantity_on_hand * product.unit_price, 2),
            "lowStock": item.is_low,
        }

    def store_summary(self, store_id: int) -> dict[str, Any]:
        store = self.store(store_id)
        rows = [self.row(item) for item in self.find_items(store_id)]
        low = [row for row in rows if row["lowStock"]]
        return {
            "store": as_json(store),
            "productsStocked": len(rows),
            "productsInCatalog": len(self.products),
            "totalUnits": sum(row["quantityOnHand"] for row in rows),
            "inventoryValue": round(sum(row["stockValue"] for row in rows), 2),
            "lowStockCount": len(low),
            "lowStock": low,
            "generatedAt": _now(),
        }

    def product_details(self, product_id: int) -> dict[str, Any]:
        product = self.product(product_id)
        items = self.find_items(product_id=product_id)
        return {
            "product": as_json(product),
            "category": as_json(self.categories[product.category_id]),
            "supplier": as_json(self.suppliers[product.supplier_id]),
            "stockByStore": [
                {
                    "storeId": item.store_id,
                    "storeName": self.stores[item.store_id].name,
                    "quantityOnHand": item.quantity_on_hand,
                    "reorderThreshold": item.reorder_threshold,
                    "lowStock": item.is_low,
                }
                for item in items
            ],
            "totalOnHand": sum(item.quantity_on_hand for item in items),
        }

    def dashboard(self, store_id: int | None = None) -> dict[str, Any]:
        """Everything the store dashboard draws: the store list and the selected store's rows."""
        rows = [self.row(item) for item in self.find_items(store_id)]
        return {
            "storeId": store_id,
            "stores": [as_json(s) for s in self.stores.values()],
            "rows": rows,
            "totals": {
                "rows": len(rows),
                "units": sum(row["quantityOnHand"] for row in rows),
                "value": round(sum(row["stockValue"] for row in rows), 2),
                "lowStock": sum(1 for row in rows if row["lowStock"]),
            },
            "generatedAt": _now(),
        }

    # Mutations

    def set_item(
        self, store_id: int, product_id: int, quantity_on_hand: int, reorder_threshold: int
    ) -> tuple[InventoryItem, bool]:
        """Create or replace a row with absolute values; also says whether it was created."""
        self.store(store_id)
        self.product(product_id)
        for name, value in (
            ("quantityOnHand", quantity_on_hand),
            ("reorderThreshold", reorder_threshold),
        ):
            if value < 0:
                raise InventoryError(f"{name} must be 0 or more, not {value}")
        created = (store_id, product_id) not in self.items
        item = InventoryItem(store_id, product_id, quantity_on_hand, reorder_threshold, _now())
        self.items[store_id, product_id] = item
        return item, created

    def adjust(self, store_id: int, product_id: int, delta: int) -> InventoryItem:
        store = self.store(store_id)
        product = self.product(product_id)
        item = self.items.get((store_id, product_id))
        if item is None:
            raise InventoryError(
                f"{store.name} (store {store_id}) does not stock {product.name} "
                f"(product {product_id}); create the row with set_inventory first"
            )
        if item.quantity_on_hand + delta < 0:
            raise InventoryError(
                f"Cannot adjust {product.name} at {store.name} by {delta}: only "
                f"{item.quantity_on_hand} on hand, and stock cannot go below 0"
            )
        item.quantity_on_hand += delta
        item.last_updated = _now()
        return item
