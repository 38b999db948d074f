"""systemd's notify protocol: one datagram per state to the socket in `$NOTIFY_SOCKET`.

The protocol is a few lines (sd_notify(3)); the packages that wrap it are either unmaintained or a
C extension, so it is spoken here. Without `$NOTIFY_SOCKET` (not run by systemd) nothing is sent.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Mapping

logger = logging.getLogger("mcpapps.supervisor")


def notify(message: str, environ: Mapping[str, str]) -> bool:
    """Send `message` (e.g. "READY=1"); whether it was sent."""
    address = environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(address)
            sock.sendall(message.encode())
        except OSError as error:
            logger.warning("could not tell systemd %r: %s", message, error)
            return False
    return True


def watchdog_interval(environ: Mapping[str, str]) -> float | None:
    """How often to send WATCHDOG=1: half of `$WATCHDOG_USEC`, when systemd asks for it."""
    with contextlib.suppress(ValueError):
        usec = int(environ.get("WATCHDOG_USEC", ""))
        if usec > 0:
            return usec / 2_000_000
    return None
