"""HTTP/1.1 by hand, for tests that need what HTTP clients never send: a body split across
packets, a body that never ends, a request reusing a connection exactly as given."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import attrs
import h11
import trio


@attrs.frozen
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes


class RawConnection:
    """One TCP connection; requests are written as given, responses parsed with h11."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._parser = h11.Connection(h11.CLIENT)

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def response(self) -> RawResponse | None:
        """The next response, or None once the server has closed the connection."""
        if self._parser.our_state is h11.DONE and self._parser.their_state is h11.DONE:
            self._parser.start_next_cycle()
        # Written by hand: tell the parser a request went out, so it reads the answer.
        if self._parser.our_state is h11.IDLE:
            self._parser.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
            self._parser.send(h11.EndOfMessage())
        status, headers, body = 0, {}, b""
        while True:
            event = self._parser.next_event()
            if event is h11.NEED_DATA:
                data = await self.stream.receive_some()
                if not data and status == 0:
                    return None
                self._parser.receive_data(data)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return RawResponse(status, headers, body)


@contextlib.asynccontextmanager
async def raw_connection(port: int) -> AsyncIterator[RawConnection]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        yield RawConnection(stream)


def request(
    method: str, target: str, port: int, body: bytes | None = None, **headers: str
) -> bytes:
    """A request's head (and body if given) as bytes; `content_length` overrides the length."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    length = headers.pop("content_length", None)
    if length is None and body is not None:
        length = str(len(body))
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")
