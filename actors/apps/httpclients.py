"""The SDK's HTTP clients as an app at a URL is reached with: Streamable HTTP and HTTP+SSE, each
on an httpx2 client of the app's own (its headers, our TLS trust, short-lived idle connections,
one write per request: actors/apps/onewrite.py). actors/apps/transports.py opens them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from actors.apps.onewrite import one_write_per_request
from actors.tls import client_tls

KEEPALIVE_EXPIRY_S = 2.0  # idle connections to an http or sse app; see `http_transport`


def http_transport(
    url: str, headers: Mapping[str, str], timeout_s: float, *, auth: httpx2.Auth | None = None
) -> Any:
    """The SDK's Streamable HTTP client with the app's headers. The read timeout is the app's
    request timeout plus a margin: our own deadline is the one that should fire first. Idle
    connections are dropped after 2 s, well before servers close theirs (uvicorn and Hypercorn
    at 5 s, httpx's own default too): a request sent on a connection the server is closing at
    that moment would be lost. `auth`: the app's OAuth client (`actors/apps/signin.py`)."""
    client = httpx2.AsyncClient(
        auth=auth,
        verify=client_tls(),
        headers=dict(headers),
        timeout=httpx2.Timeout(30.0, read=timeout_s + 30.0),
        limits=httpx2.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S),
    )
    return _owned_http_transport(one_write_per_request(client), url)


@contextlib.asynccontextmanager
async def _owned_http_transport(client: httpx2.AsyncClient, url: str) -> AsyncIterator[Any]:
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


def sse_transport(
    url: str, headers: Mapping[str, str], timeout_s: float, *, auth: httpx2.Auth | None = None
) -> Any:
    """The SDK's client of the HTTP+SSE transport (protocol revision 2024-11-05): one GET
    stream carries everything the app sends, and each of our messages is a POST to the address
    the stream names first. A POST is answered at once (202), its answer comes on the stream,
    so `timeout_s` (the request's deadline, ours to enforce) plays no part here: connecting and
    sending get 30 s, as for Streamable HTTP. The stream may stay quiet for the SDK's 300 s,
    which liveness pings (every `ping_interval_s` while idle) never let a live app reach. Idle
    connections are dropped early, as in `http_transport`."""

    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return one_write_per_request(
            httpx2.AsyncClient(
                headers=headers,
                timeout=timeout,
                auth=auth,
                verify=client_tls(),
                limits=httpx2.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S),
            )
        )

    return sse_client(
        url, headers=dict(headers), timeout=30.0, httpx_client_factory=client, auth=auth
    )
