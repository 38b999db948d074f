"""The bundled example app, mcpapps/grocery-inventory, as its clients see it.

Every test starts the real server as a subprocess and talks to it with the real MCP SDK client,
over stdio and over Streamable HTTP, in both protocol eras: `mode="legacy"` (the `initialize`
handshake) and `mode="auto"` (discover-first, which this mcp 2.x server answers with the stateless
2026-07-28 revision). `trio.fail_after` only guards against hangs; nothing asserts a duration.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import (
    PromptReference,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    TextContent,
)

from tests.support import forkserver
from tests.support.frontdoor import INITIALIZE
from tests.support.running import GROCERY_TOOLS

APP_DIR = Path(__file__).resolve().parents[1] / "mcpapps" / "grocery-inventory"
SERVER = APP_DIR / "server.py"
DASHBOARD_URI = "ui://grocery/store-dashboard.html"
APP_MIME_TYPE = "text/html;profile=mcp-app"
UI_EXTENSION = "io.modelcontextprotocol/ui"
HANG_GUARD = 30

# The revision each client mode settles on against this server (mcp 2.3.0 on both ends).
NEGOTIATED = {"legacy": "2025-11-25", "auto": "2026-07-28"}
MODES = pytest.mark.parametrize("mode", list(NEGOTIATED))

TOOLS = GROCERY_TOOLS


def stdio_app(mode: str, **options: Any) -> Client:
    params = StdioServerParameters(
        command=forkserver.python(), args=[str(SERVER)], cwd=str(APP_DIR)
    )
    return Client(params, mode=mode, **options)


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """A tool's structured result, after checking the call succeeded."""
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, f"{name}({arguments}) failed: {text_of(result)}"
    return result.structured_content


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


# --- Handshake and catalog ----------------------------------------------------------------------


@MODES
async def test_each_mode_negotiates_its_protocol_era(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            assert client.protocol_version == NEGOTIATED[mode]
            caps = client.server_capabilities
            assert caps.tools is not None
            assert caps.resources is not None
            assert caps.prompts is not None
            assert caps.completions is not None
            if mode == "legacy":
                assert client.server_info is not None
                assert client.server_info.name == "grocery-inventory"
            else:
                # Extensions are only exchanged in the 2026-07-28 era.
                assert caps.extensions is not None
                assert UI_EXTENSION in caps.extensions


@MODES
async def test_every_tool_is_listed_with_an_object_schema(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == TOOLS
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["type"] == "object", tool.name
        assert isinstance(schema.get("properties"), dict), tool.name
        assert tool.description, tool.name

    adjust = tools["adjust_stock"].input_schema
    assert set(adjust["required"]) == {"storeId", "productId", "delta"}
    assert adjust["properties"]["delta"]["type"] == "integer"
    set_inventory = tools["set_inventory"].input_schema
    assert set(set_inventory["required"]) == {
        "storeId",
        "productId",
        "quantityOnHand",
        "reorderThreshold",
    }
    assert set_inventory["properties"]["quantityOnHand"]["minimum"] == 0
    assert "categoryId" in tools["get_products"].input_schema["properties"]
    assert "storeId" in tools["get_inventory"].input_schema["properties"]


@MODES
async def test_ui_tools_carry_their_resource_and_visibility(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    dashboard = tools["show_store_inventory_dashboard"].meta["ui"]
    assert dashboard["resourceUri"] == DASHBOARD_URI
    assert "model" in dashboard["visibility"]
    app_only = tools["get_store_dashboard_data"].meta["ui"]
    assert app_only["resourceUri"] == DASHBOARD_URI
    assert app_only["visibility"] == ["app"]
    ui_tools = {"show_store_inventory_dashboard", "get_store_dashboard_data", "open_inventory_file"}
    plain = TOOLS - ui_tools
    for name in plain:
        assert "ui" not in (tools[name].meta or {}), name


# --- Tools --------------------------------------------------------------------------------------


@MODES
async def test_query_tools_answer_from_the_seed_data(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            categories = (await call(client, "get_categories"))["categories"]
            assert {"id": 1, "name": "Produce"} in categories
            assert (await call(client, "get_categories", {"id": 2}))["categories"] == [
                {"id": 2, "name": "Dairy & Eggs"}
            ]

            produce = (await call(client, "get_products", {"categoryId": 1}))["products"]
            assert produce
            assert {p["categoryId"] for p in produce} == {1}
            assert {"sku", "name", "unitPrice", "unitOfMeasure"} <= set(produce[0])
            from_dairy = (await call(client, "get_products", {"supplierId": 2}))["products"]
            assert {p["supplierId"] for p in from_dairy} == {2}
            one = (await call(client, "get_products", {"id": 10}))["products"]
            assert [p["name"] for p in one] == ["Atlantic Salmon Fillet"]

            suppliers = (await call(client, "get_suppliers"))["suppliers"]
            assert all("@" in s["contactEmail"] for s in suppliers)

            stores = (await call(client, "get_stores"))["stores"]
            assert stores[0] == {
                "id": 1,
                "name": "Downtown Market",
                "city": "Portland",
                "state": "OR",
            }
            assert len((await call(client, "get_stores", {"id": 3}))["stores"]) == 1

            rows = (await call(client, "get_inventory", {"storeId": 2}))["items"]
            assert rows
            assert {row["storeId"] for row in rows} == {2}
            assert {"quantityOnHand", "reorderThreshold", "productName", "lowStock"} <= set(rows[0])
            by_product = (await call(client, "get_inventory", {"productId": 5}))["items"]
            assert {row["productId"] for row in by_product} == {5}

            low = await call(client, "get_low_stock")
            assert low["count"] == len(low["items"]) > 0
            assert all(r["quantityOnHand"] <= r["reorderThreshold"] for r in low["items"])
            low_at_3 = (await call(client, "get_low_stock", {"storeId": 3}))["items"]
            assert low_at_3
            assert {row["storeId"] for row in low_at_3} == {3}

            stats = await call(client, "get_server_stats")
            assert stats["sessions"] == 1
            assert stats["protocolVersion"] == NEGOTIATED[mode]


@MODES
async def test_set_inventory_and_adjust_stock_change_the_stock(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            # Lakeside Foods (4) does not stock Baby Spinach (3) in the seed data.
            created = await call(
                client,
                "set_inventory",
                {"storeId": 4, "productId": 3, "quantityOnHand": 5, "reorderThreshold": 10},
            )
            assert created["created"] is True
            assert created["item"]["lowStock"] is True
            low = (await call(client, "get_low_stock", {"storeId": 4}))["items"]
            assert 3 in {row["productId"] for row in low}

            added = await call(
                client,
                "adjust_stock",
                {"storeId": 4, "productId": 3, "delta": 20, "reason": "delivery"},
            )
            assert added["previousQuantity"] == 5
            assert added["item"]["quantityOnHand"] == 25
            assert added["item"]["lowStock"] is False
            assert added["updatedResource"] == "inventory://stores/4/summary"

            removed = await call(
                client, "adjust_stock", {"storeId": 4, "productId": 3, "delta": -25}
            )
            assert removed["item"]["quantityOnHand"] == 0

            replaced = await call(
                client,
                "set_inventory",
                {"storeId": 4, "productId": 3, "quantityOnHand": 40, "reorderThreshold": 10},
            )
            assert replaced["created"] is False
            rows = (await call(client, "get_inventory", {"storeId": 4, "productId": 3}))["items"]
            assert [row["quantityOnHand"] for row in rows] == [40]


BAD_CALLS = [
    ("get_inventory", {"storeId": 99}, "Unknown store id 99"),
    ("get_low_stock", {"storeId": 0}, "Unknown store id 0"),
    ("get_products", {"categoryId": 42}, "Unknown category id 42"),
    ("get_suppliers", {"id": 77}, "Unknown supplier id 77"),
    ("show_store_inventory_dashboard", {"storeId": 12}, "Unknown store id 12"),
    ("get_store_dashboard_data", {"storeId": 12}, "Unknown store id 12"),
    (
        "set_inventory",
        {"storeId": 1, "productId": 1, "quantityOnHand": -3, "reorderThreshold": 5},
        "quantityOnHand must be 0 or more",
    ),
    (
        "set_inventory",
        {"storeId": 1, "productId": 1, "quantityOnHand": 3, "reorderThreshold": -5},
        "reorderThreshold must be 0 or more",
    ),
    ("adjust_stock", {"storeId": 1, "productId": 999, "delta": 1}, "Unknown product id 999"),
    ("adjust_stock", {"storeId": 1, "productId": 1, "delta": -100000}, "cannot go below 0"),
    ("adjust_stock", {"storeId": 4, "productId": 3, "delta": 1}, "does not stock"),
    ("adjust_stock", {"storeId": 1, "productId": 1}, "delta"),
    ("get_stores", {"id": "downtown"}, "id"),
    ("no_such_tool", {}, "Unknown tool"),
]


@MODES
async def test_bad_arguments_are_tool_errors_with_clear_text(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            for name, arguments, expected in BAD_CALLS:
                result = await client.call_tool(name, arguments)
                assert result.is_error, f"{name}({arguments}) should fail"
                assert expected in text_of(result), (name, arguments, text_of(result))
            # Nothing above broke the session.
            assert (await call(client, "get_stores", {"id": 1}))["stores"][0]["id"] == 1


@MODES
async def test_dashboard_tool_gives_text_for_the_model_and_data_for_the_view(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            result = await client.call_tool("show_store_inventory_dashboard", {"storeId": 1})
            assert not result.is_error
            assert "Downtown Market" in text_of(result)
            data = result.structured_content
            assert data["storeId"] == 1
            assert len(data["stores"]) == 4
            assert data["rows"]
            assert {row["storeId"] for row in data["rows"]} == {1}
            assert data["totals"]["rows"] == len(data["rows"])
            assert data["totals"]["lowStock"] == sum(row["lowStock"] for row in data["rows"]) > 0

            every_store = await call(client, "show_store_inventory_dashboard")
            assert every_store["storeId"] is None
            assert {row["storeId"] for row in every_store["rows"]} == {1, 2, 3, 4}

            refreshed = await call(client, "get_store_dashboard_data", {"storeId": 2})
            assert set(refreshed) == set(data)
            assert {row["storeId"] for row in refreshed["rows"]} == {2}


# --- Resources, templates, prompts, completions ------------------------------------------------


@MODES
async def test_ui_resource_is_a_self_contained_mcp_app_view(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            read = await client.read_resource(DASHBOARD_URI)

    assert listed[DASHBOARD_URI].mime_type == APP_MIME_TYPE
    [content] = read.contents
    assert content.mime_type == APP_MIME_TYPE
    html = content.text
    for protocol_word in (
        "ui/initialize",
        "ui/notifications/initialized",
        "ui/notifications/tool-input",
        "ui/notifications/tool-result",
        "tools/call",
        "get_store_dashboard_data",
        "postMessage",
    ):
        assert protocol_word in html, protocol_word
    assert re.search(r"<script[^>]*\bsrc=", html) is None
    assert re.search(r"<link[^>]*\bhref=", html) is None
    assert "http://" not in html
    assert "https://" not in html


SHEET_URI = "ui://grocery/inventory-sheet.html"


@MODES
async def test_the_inventory_sheet_is_a_file_viewer_for_csv(mode: str) -> None:
    """The file entry point (OpenAI MCP extensions): an app-only UI tool that a host with a
    workspace offers for .csv files, called with the file's name and opaque URI; its view
    reads, watches and saves the file through the host, naming the version it read."""
    opened = {"file": {"name": "stock.csv", "resourceUri": "host-resource://0a1b2c"}}
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            result = await client.call_tool("open_inventory_file", opened)
            missing = await client.call_tool("open_inventory_file", {})
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            read = await client.read_resource(SHEET_URI)

    meta = tools["open_inventory_file"].meta or {}
    assert meta["openai/ui"] == {"entrypoints": [{"type": "file", "extensions": [".csv"]}]}
    assert meta["ui"] == {"resourceUri": SHEET_URI, "visibility": ["app"]}
    assert tools["open_inventory_file"].input_schema["required"] == ["file"]
    assert not result.is_error
    assert result.structured_content == {"file": {"name": "stock.csv"}}
    assert missing.is_error
    assert listed[SHEET_URI].mime_type == APP_MIME_TYPE
    html = read.contents[0].text
    for protocol_word in (
        "ui/initialize",
        "ui/notifications/tool-input",
        "resources/read",
        'representation: "text"',
        "resources/subscribe",
        "notifications/resources/updated",
        "openai/resources/write",
        "ifMatch",
        '"conflict"',
        '"too-large"',
    ):
        assert protocol_word in html, protocol_word
    assert re.search(r"<script[^>]*\bsrc=", html) is None
    assert "http://" not in html
    assert "https://" not in html


@MODES
async def test_resource_templates_list_and_read(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            templates = {
                t.uri_template: t
                for t in (await client.list_resource_templates()).resource_templates
            }
            assert set(templates) == {
                "inventory://stores/{storeId}/summary",
                "inventory://products/{productId}/details",
            }
            assert all(t.mime_type == "application/json" for t in templates.values())

            summary = await client.read_resource("inventory://stores/1/summary")
            data = json.loads(summary.contents[0].text)
            assert data["store"]["name"] == "Downtown Market"
            assert data["lowStockCount"] == len(data["lowStock"]) > 0

            details = await client.read_resource("inventory://products/10/details")
            data = json.loads(details.contents[0].text)
            assert data["product"]["sku"] == "MSF-SAL-ATL"
            assert data["supplier"]["id"] == 4
            assert {row["storeId"] for row in data["stockByStore"]} == {1, 2, 3}

            with pytest.raises(MCPError, match="Unknown store id 9"):
                await client.read_resource("inventory://stores/9/summary")
            with pytest.raises(MCPError, match="Unknown product id 404"):
                await client.read_resource("inventory://products/404/details")


@MODES
async def test_prompts_list_and_render(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(prompts) == {
                "analyze_store_performance",
                "draft_supplier_order",
                "explain_inventory_term",
            }

            def arguments(name: str) -> dict[str, bool]:
                return {a.name: bool(a.required) for a in prompts[name].arguments or []}

            assert arguments("analyze_store_performance") == {"storeId": True}
            assert arguments("draft_supplier_order") == {
                "supplierId": True,
                "storeId": False,
                "urgency": False,
            }
            assert arguments("explain_inventory_term") == {"term": True}

            async def render(name: str, args: dict[str, str]) -> str:
                result = await client.get_prompt(name, args)
                return "\n".join(m.content.text for m in result.messages)

            assert "Downtown Market" in await render("analyze_store_performance", {"storeId": "1"})
            order = await render(
                "draft_supplier_order", {"supplierId": "2", "storeId": "3", "urgency": "urgent"}
            )
            assert "Sunrise Dairy Co-op" in order
            assert "urgent" in order
            assert "safety stock" in await render(
                "explain_inventory_term", {"term": "safety stock"}
            )

            with pytest.raises(MCPError, match="Unknown supplier id 99"):
                await client.get_prompt("draft_supplier_order", {"supplierId": "99"})
            with pytest.raises(MCPError, match="storeId must be a number"):
                await client.get_prompt("analyze_store_performance", {"storeId": "downtown"})


@MODES
async def test_completions_offer_ids_and_terms(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:

            async def values(ref: Any, name: str, typed: str) -> list[str]:
                result = await client.complete(ref, {"name": name, "value": typed})
                return result.completion.values

            analyze = PromptReference(type="ref/prompt", name="analyze_store_performance")
            order = PromptReference(type="ref/prompt", name="draft_supplier_order")
            explain = PromptReference(type="ref/prompt", name="explain_inventory_term")
            summary = ResourceTemplateReference(
                type="ref/resource", uri="inventory://stores/{storeId}/summary"
            )
            details = ResourceTemplateReference(
                type="ref/resource", uri="inventory://products/{productId}/details"
            )

            assert await values(analyze, "storeId", "") == ["1", "2", "3", "4"]
            assert await values(analyze, "storeId", "hill") == ["3"]  # by store name
            assert await values(order, "supplierId", "") == ["1", "2", "3", "4", "5", "6"]
            assert await values(order, "storeId", "4") == ["4"]
            assert await values(order, "urgency", "e") == ["emergency"]
            assert await values(explain, "term", "sa") == ["safety stock"]
            assert "FIFO" in await values(explain, "term", "")
            assert await values(summary, "storeId", "2") == ["2"]
            assert await values(details, "productId", "atlantic") == ["10"]
            assert await values(explain, "nonsense", "") == []


# --- Notifications ------------------------------------------------------------------------------


async def test_adjust_stock_notifies_a_handshake_era_client() -> None:
    updated: list[str] = []
    arrived = trio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            arrived.set()

    with trio.fail_after(HANG_GUARD):
        async with stdio_app("legacy", message_handler=on_message) as client:
            await call(client, "adjust_stock", {"storeId": 2, "productId": 1, "delta": -3})
            await arrived.wait()
    assert updated == ["inventory://stores/2/summary"]


async def test_adjust_stock_notifies_2026_listen_subscribers() -> None:
    uri = "inventory://stores/3/summary"
    with trio.fail_after(HANG_GUARD):
        async with stdio_app("auto") as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                await call(client, "adjust_stock", {"storeId": 3, "productId": 5, "delta": 10})
                event = await subscription.__anext__()
    assert event == ResourceUpdated(uri=uri)


@MODES
async def test_one_client_is_one_session(mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with stdio_app(mode) as client:
            first = await call(client, "get_server_stats")
            for _ in range(5):
                await call(client, "get_stores")
            last = await call(client, "get_server_stats")
    assert first["sessions"] == last["sessions"] == 1
    assert last["pid"] == first["pid"]
    counted = "initialize" if mode == "legacy" else "discover"
    assert last[counted] == 1


# --- The stdio process itself -------------------------------------------------------------------


def jsonrpc_line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def read_line(stream: trio.abc.ReceiveStream, buffer: bytearray) -> bytes:
    while b"\n" not in buffer:
        chunk = await stream.receive_some()
        if not chunk:
            raise EOFError(f"stream closed; got {bytes(buffer)!r}")
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line


async def start_stdio_process(nursery: trio.Nursery, tmp_path: Path) -> trio.Process:
    """The server on pipes, without a client library in between; killed if the test fails."""
    with (tmp_path / "stderr.log").open("wb") as stderr:  # the child keeps its own copy
        return await nursery.start(
            partial(
                trio.run_process,
                [forkserver.python(), str(SERVER)],
                cwd=APP_DIR,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                check=False,
            )
        )


async def test_stdout_carries_only_jsonrpc_and_eof_ends_the_process(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    process = await start_stdio_process(nursery, tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
    with trio.fail_after(HANG_GUARD):
        await process.stdin.send_all(jsonrpc_line(INITIALIZE))
        await process.stdin.send_all(
            jsonrpc_line({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        # adjust_stock logs and notifies; a bad call logs an error. None of it may hit stdout.
        for request_id, arguments in [
            (2, {"storeId": 1, "productId": 1, "delta": 2}),
            (3, {"storeId": 1, "productId": 1, "delta": -100000}),
        ]:
            await process.stdin.send_all(
                jsonrpc_line(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": "tools/call",
                        "params": {"name": "adjust_stock", "arguments": arguments},
                    }
                )
            )
        # Every line until both calls are answered, then whatever follows EOF on stdin.
        buffer = bytearray()
        lines: list[bytes] = []
        while not {2, 3} <= {json.loads(line).get("id") for line in lines}:
            lines.append(await read_line(process.stdout, buffer))
        await process.stdin.aclose()
        while chunk := await process.stdout.receive_some():
            buffer += chunk
        lines += bytes(buffer).splitlines()
        await process.wait()

    messages = [json.loads(line) for line in lines]
    assert all(m["jsonrpc"] == "2.0" for m in messages), lines
    responses = {m["id"]: m for m in messages if "id" in m}
    assert set(responses) == {1, 2, 3}
    assert responses[2]["result"]["isError"] is False
    assert responses[3]["result"]["isError"] is True
    assert any(m.get("method") == "notifications/resources/updated" for m in messages)
    assert process.returncode == 0
    assert "stdin closed" in (tmp_path / "stderr.log").read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_ends_the_stdio_process_while_stdin_stays_open(
    nursery: trio.Nursery, tmp_path: Path, signum: signal.Signals
) -> None:
    process = await start_stdio_process(nursery, tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
    with trio.fail_after(HANG_GUARD):
        await process.stdin.send_all(jsonrpc_line(INITIALIZE))
        assert json.loads(await read_line(process.stdout, bytearray()))["id"] == 1
        process.send_signal(signum)
        await process.wait()
    assert process.returncode == 0
    assert f"{signum.name} received" in (tmp_path / "stderr.log").read_text()


# --- Streamable HTTP ----------------------------------------------------------------------------


class HttpApp:
    def __init__(self, process: trio.Process, url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture
async def http_app(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[HttpApp]:
    """`server.py --http --port 0` as a subprocess; the URL comes from its `listening on` line."""
    log = tmp_path / "http.log"
    with log.open("wb") as stderr:  # the child keeps its own copy
        process: trio.Process = await nursery.start(
            partial(
                trio.run_process,
                [sys.executable, str(SERVER), "--http", "--port", "0"],
                cwd=APP_DIR,
                stdin=subprocess.DEVNULL,
                stderr=stderr,
                check=False,
            )
        )
    with trio.fail_after(HANG_GUARD):
        while not (found := re.search(r"listening on (http://\S+/mcp)", log.read_text())):
            assert process.returncode is None, log.read_text()
            await trio.sleep(0.05)
    yield HttpApp(process, found.group(1), log)
    if process.returncode is None:
        process.terminate()
        with trio.fail_after(HANG_GUARD):
            await process.wait()


@MODES
async def test_http_serves_the_same_app(http_app: HttpApp, mode: str) -> None:
    with trio.fail_after(HANG_GUARD):
        async with Client(http_app.url, mode=mode) as client:
            assert client.protocol_version == NEGOTIATED[mode]
            tools = (await client.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            assert all(tool.input_schema["type"] == "object" for tool in tools)

            stores = (await call(client, "get_stores"))["stores"]
            assert len(stores) == 4
            adjusted = await call(
                client, "adjust_stock", {"storeId": 1, "productId": 2, "delta": 5}
            )
            assert adjusted["item"]["quantityOnHand"] == adjusted["previousQuantity"] + 5
            bad = await client.call_tool("get_inventory", {"storeId": 99})
            assert bad.is_error
            assert "Unknown store id 99" in text_of(bad)

            ui = await client.read_resource(DASHBOARD_URI)
            assert ui.contents[0].mime_type == APP_MIME_TYPE
            assert "ui/initialize" in ui.contents[0].text
            summary = await client.read_resource("inventory://stores/1/summary")
            assert json.loads(summary.contents[0].text)["store"]["id"] == 1
            prompt = await client.get_prompt("explain_inventory_term", {"term": "FIFO"})
            assert prompt.messages
            completion = await client.complete(
                PromptReference(type="ref/prompt", name="analyze_store_performance"),
                {"name": "storeId", "value": ""},
            )
            assert completion.completion.values == ["1", "2", "3", "4"]

            stats = await call(client, "get_server_stats")
            assert stats["pid"] == http_app.process.pid
            assert stats["sessions"] == 1


async def test_http_counts_each_client_session_in_one_process(http_app: HttpApp) -> None:
    with trio.fail_after(HANG_GUARD):
        for expected, mode in enumerate(["legacy", "auto", "legacy"], start=1):
            async with Client(http_app.url, mode=mode) as client:
                await call(client, "get_stores")
                await call(client, "get_low_stock")
                stats = await call(client, "get_server_stats")
            assert stats["sessions"] == expected
            assert stats["pid"] == http_app.process.pid
    assert (stats["initialize"], stats["discover"]) == (2, 1)


async def raw_http(port: int, head: str, body: bytes = b"") -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(head.replace("\n", "\r\n").encode() + body)
        response = bytearray()
        while chunk := await stream.receive_some():
            response += chunk
    return bytes(response)


async def test_http_guards_its_host_and_has_only_the_mcp_path(http_app: HttpApp) -> None:
    body = json.dumps(INITIALIZE).encode()

    def post(host: str) -> str:
        return (
            f"POST /mcp HTTP/1.1\nHost: {host}\nContent-Type: application/json\n"
            f"Accept: application/json, text/event-stream\nContent-Length: {len(body)}\n"
            "Connection: close\n\n"
        )

    with trio.fail_after(HANG_GUARD):
        foreign = await raw_http(http_app.port, post("evil.example.com"), body)
        local = await raw_http(http_app.port, post(f"localhost:{http_app.port}"), body)
        elsewhere = await raw_http(
            http_app.port, "GET /nope HTTP/1.1\nHost: localhost\nConnection: close\n\n"
        )
    assert foreign.startswith(b"HTTP/1.1 421")
    assert local.startswith(b"HTTP/1.1 200")
    assert b'"protocolVersion":"2025-11-25"' in local
    assert elsewhere.startswith(b"HTTP/1.1 404")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_the_http_server_cleanly(
    http_app: HttpApp, signum: signal.Signals
) -> None:
    with trio.fail_after(HANG_GUARD):
        async with Client(http_app.url, mode="legacy") as client:
            await call(client, "get_stores")
        http_app.process.send_signal(signum)
        await http_app.process.wait()
    assert http_app.process.returncode == 0
    assert f"{signum.name} received" in http_app.log.read_text()
