"""One connection's failure inside Hypercorn ends that connection, never the server.

Hypercorn's Trio worker (0.18.0) runs each connection as a task of the nursery that holds its
listeners, so an exception its own protocol code raises while handling one connection's bytes
ends the whole server, and with it the supervisor. Bytes that follow a WebSocket upgrade it has
not accepted do that (it answers them with a second response, which h11 refuses: Hypercorn's
issue #225, open upstream); any client could send them. Its per-connection class is replaced by
one that drops the failing connection and logs one line, so the other connections, the apps and
the supervisor go on. Our own ASGI code never raises through here: Hypercorn catches what an
ASGI app raises and answers 500.

The same class closes a connection whose WebSocket handshake Hypercorn refused itself (a
`Sec-WebSocket-Version` other than 13, say). Hypercorn answers that 400 with `connection:
close` and never closes it: its idle clock was stopped when the request came and no request
ends to start it again, so any client could hold descriptors for as long as it liked, before
any check of ours (no token needed).

And it closes a connection as soon as its client has gone. Hypercorn's reading loop ends when
the client closes (or resets) the connection, and it tells the open request so (ASGI's
`http.disconnect`); but it closes the socket only once every task of the connection has ended,
and one of them is its idle timer, which sleeps out the whole keep-alive time
(`[limits] keep_alive_s`) whatever the client did. Each connection a client closed was kept in
CLOSE_WAIT for that long: at a few hundred clients a minute, hundreds of dead sockets and their
descriptors. No Hypercorn setting changes it (a shorter keep-alive would close live idle ones
too). A client's end of stream means nothing more can be read and, in HTTP, that it has gone:
Hypercorn already ends the request for it; now the timer is stopped and the socket closed
then too.
"""

from __future__ import annotations

import logging
from typing import Any

import h11
import hypercorn.trio.run
from hypercorn.events import Closed, Event, RawData
from hypercorn.protocol.h11 import H11WSConnection
from hypercorn.trio.tcp_server import TCPServer

from supervisor.model.errors import McpappsError

logger = logging.getLogger("mcpapps.web")


class IsolatedTCPServer(TCPServer):
    """Hypercorn's connection handler, whose failure ends its own connection only."""

    async def run(self) -> None:
        peer = _peer(self.stream)
        try:
            await super().run()  # closes the connection on its way out, whichever way
        except Exception as error:
            logger.warning(
                "dropped a connection from %s: the HTTP server could not handle its bytes (%s)",
                peer,
                _short(error),
            )

    async def _read_data(self) -> None:
        await super()._read_data()  # returns when the client has gone (or sent nothing in time)
        await self.idle_task.stop()  # else it holds the connection for the keep-alive time
        await self._close()  # what is still being answered can reach nobody

    async def protocol_send(self, event: Event) -> None:
        await super().protocol_send(event)
        if isinstance(event, RawData) and _refused_upgrade(self.protocol):
            await super().protocol_send(Closed())


def _refused_upgrade(protocol: Any) -> bool:
    """Whether the connection is a WebSocket upgrade whose refusal, sent with `connection:
    close`, has gone out in full (h11 then waits for nothing but the close). Hypercorn 0.18's
    HTTP/1.1 protocol object and its connection wrapper for an upgrade, read without change."""
    connection = getattr(getattr(protocol, "protocol", None), "connection", None)
    if not isinstance(connection, H11WSConnection):
        return False
    return connection.h11_connection.our_state is h11.MUST_CLOSE


def isolate_connections() -> None:
    """Make Hypercorn's Trio worker serve every connection with `IsolatedTCPServer` (both
    listeners of the supervisor use that worker)."""
    hypercorn.trio.run.TCPServer = IsolatedTCPServer  # type: ignore[misc]


# What refuses a WebSocket upgrade: an HTTP answer to its handshake, or a close before accepting.
_REFUSALS = ("websocket.http.response.start", "websocket.http.response.body", "websocket.close")


class HandshakeAnswered(McpappsError):
    """Hypercorn answered this WebSocket handshake itself before we could accept it."""


def websocket_send(send: Any) -> Any:
    """`send` of a WebSocket scope that knows when Hypercorn has answered the handshake first:
    when the client sends bytes before its handshake is answered, Hypercorn answers it 400 at
    once, and h11 then refuses ours. A refusal of ours is then moot (the client has its
    answer); an accept raises `HandshakeAnswered`, so the route ends instead of serving a
    connection that is gone (Hypercorn would never tell it of the disconnect)."""

    async def send_websocket(message: dict[str, Any]) -> None:
        try:
            await send(message)
        except h11.LocalProtocolError:
            if message["type"] == "websocket.accept":
                raise HandshakeAnswered from None
            if message["type"] not in _REFUSALS:
                raise

    return send_websocket


def _peer(stream: Any) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
    except (AttributeError, OSError, ValueError):
        return "a client"
    return f"{host}:{port}"


def _short(error: BaseException) -> str:
    """The first error that is not a group, and how many more there were."""
    leaves: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop(0)
        if isinstance(current, BaseExceptionGroup):
            pending[:0] = current.exceptions
        else:
            leaves.append(current)
    first = leaves[0] if leaves else error
    more = f" and {len(leaves) - 1} more" if len(leaves) > 1 else ""
    return f"{type(first).__name__}: {first}"[:300] + more
