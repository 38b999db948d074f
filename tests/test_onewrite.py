"""An HTTP app's requests go out in one write each (actors/apps/onewrite.py): the same bytes
on the wire as httpx2 sends them, in one system call instead of two, against a real HTTP server
on loopback."""

from __future__ import annotations

import functools
from typing import Any

import h11
import httpcore2
import httpx2
import trio

from actors.apps.onewrite import one_write_per_request
from actors.tls import client_tls


class _Counted(httpcore2.AsyncNetworkStream):
    """The real socket stream, its writes counted (what the test looks at)."""

    def __init__(self, stream: httpcore2.AsyncNetworkStream, writes: list[bytes]) -> None:
        self._stream = stream
        self._writes = writes

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:  # httpcore2 writes the end of a body as b"", which sends nothing
            self._writes.append(buffer)
        await self._stream.write(buffer, timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _CountingBackend(httpcore2.AsyncNetworkBackend):
    def __init__(self, backend: Any, writes: list[bytes]) -> None:
        self._backend = backend
        self._writes = writes

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        return _Counted(await self._backend.connect_tcp(*args, **kwargs), self._writes)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


async def _echo_server(received: list[bytes], stream: trio.SocketStream) -> None:
    """An HTTP/1.1 server that answers every request with its body, keeping the connection."""
    connection = h11.Connection(h11.SERVER)
    body = b""
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(65536)
            if not data:
                return
            connection.receive_data(data)
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            received.append(body)
            headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
            answer = connection.send(h11.Response(status_code=200, headers=headers))
            answer += connection.send(h11.Data(data=body)) + connection.send(h11.EndOfMessage())
            await stream.send_all(answer)
            connection.start_next_cycle()
            body = b""
        elif isinstance(event, h11.ConnectionClosed):
            return


def _counted(client: httpx2.AsyncClient, writes: list[bytes]) -> httpx2.AsyncClient:
    pool = client._transport._pool  # type: ignore[attr-defined]
    pool._network_backend = _CountingBackend(pool._network_backend, writes)
    return client


async def test_each_request_is_one_write_of_the_same_bytes() -> None:
    received: list[bytes] = []
    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(
            functools.partial(
                trio.serve_tcp, functools.partial(_echo_server, received), 0, host="127.0.0.1"
            ),
        )
        port = listener.socket.getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        plain_writes: list[bytes] = []
        lean_writes: list[bytes] = []
        plain = _counted(httpx2.AsyncClient(verify=client_tls()), plain_writes)
        lean = one_write_per_request(_counted(httpx2.AsyncClient(verify=client_tls()), lean_writes))
        async with plain, lean:
            for i in range(3):
                body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call"}' % i
                for client in (plain, lean):
                    answer = await client.post(url, content=body)
                    assert answer.content == body
            # A request without a body (the SDK's GET stream, its DELETE) goes out too.
            assert (await lean.get(url)).status_code == 200
        nursery.cancel_scope.cancel()
    assert len(plain_writes) == 6  # head, then body, for each of the three
    assert len(lean_writes) == 4  # one for each request
    assert b"".join(lean_writes[:3]) == b"".join(plain_writes)
    assert len(received) == 7
