"""An HTTP app's requests, each sent in one write.

httpcore2 (under httpx2, under the SDK's HTTP clients) writes a request's head and its body to
the socket one after the other: two system calls for every call to an HTTP app where a stdio app
takes one line, one call. On the supervisor's machine a socket write is a large share of what a
call costs (a sampling profile of calls to an HTTP app put a quarter of the supervisor's samples
in socket sends), and side by side the second write cost about 0.2 ms of CPU per call.

So the app's connections hold what is written until the connection is read from, which is when
a request has been written whole (HTTP/1.1 reads the answer only after the request), and send it
then in one write. The bytes on the wire are the same. A write that fails is treated as
httpcore2 treats one: the response is read all the same (a server may have answered and closed
before the request was whole), and the read says what went wrong.
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpcore2
import httpx2

# A request body larger than this goes out as it comes (no point holding a large upload).
_HOLD_AT_MOST = 64 * 1024


class _OneWriteStream(httpcore2.AsyncNetworkStream):
    def __init__(self, stream: httpcore2.AsyncNetworkStream) -> None:
        self._stream = stream
        self._held = bytearray()
        self._timeout: float | None = None

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._held += buffer
        self._timeout = timeout
        if len(self._held) > _HOLD_AT_MOST:
            await self._flush()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._held:
            with contextlib.suppress(httpcore2.WriteError):
                await self._flush()
        return await self._stream.read(max_bytes, timeout)

    async def _flush(self) -> None:
        held = bytes(self._held)
        self._held.clear()
        await self._stream.write(held, self._timeout)

    async def aclose(self) -> None:
        self._held.clear()
        await self._stream.aclose()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        # The handshake runs on the plain stream (nothing is held before it); what goes inside
        # the encrypted stream is held by a stream of ours again.
        if self._held:
            await self._flush()
        return _OneWriteStream(await self._stream.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class OneWriteBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self, backend: httpcore2.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _OneWriteStream(await self._backend.connect_tcp(*args, **kwargs))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _OneWriteStream(await self._backend.connect_unix_socket(*args, **kwargs))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def one_write_per_request(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """`client`, its connections sending each request in one write. This reaches into httpx2's
    transport for its httpcore2 pool (`_pool`, `_network_backend`: private to httpx2 2.16 and
    httpcore2 2.16); should they change, the client is left as it is."""
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore2.AsyncNetworkBackend):
        pool._network_backend = OneWriteBackend(backend)  # type: ignore[union-attr]
    return client
