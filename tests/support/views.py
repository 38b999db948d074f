"""A view's requests as the page makes them: open a lease, send it a JSON-RPC request."""

from __future__ import annotations

from typing import Any

import httpx2


async def open_view(client: httpx2.AsyncClient, app_id: str, **extra: Any) -> str:
    response = await client.post("/apps/views", json={"appId": app_id, **extra})
    assert response.status_code == 201, response.text
    return response.json()["viewId"]


async def rpc(
    client: httpx2.AsyncClient, view_id: str, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    response = await client.post(f"/apps/views/{view_id}/mcp", json=message)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    return response.json()


async def call(
    client: httpx2.AsyncClient, view_id: str, name: str, arguments: dict[str, Any] | None = None
) -> dict[str, Any]:
    return await rpc(client, view_id, "tools/call", {"name": name, "arguments": arguments or {}})
