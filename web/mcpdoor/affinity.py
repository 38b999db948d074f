"""Which supervisor holds an MCP session, written into its id: the front door prefixes every
`Mcp-Session-Id` it gives out with this supervisor's tag and takes the tag off what clients
send back, so a load balancer routes a session to its supervisor by the id alone (no cookie).
The SDK's session manager never sees a tag: it mints and looks up its own ids."""

from __future__ import annotations

import hashlib
from typing import Any

SESSION_HEADER = b"mcp-session-id"


def session_tag(replica: str) -> str:
    """The tag of the supervisor named `replica` (`host:port`, supervisor/process/run.py): `r`, the
    first 8 hex digits of the name's SHA-256, and `-`. Short, visible ASCII (as MCP wants a session
    id), plain for an nginx regex, and computable from the name without asking the supervisor
    (`printf %s host:port | sha256sum | cut -c1-8`)."""
    return f"r{hashlib.sha256(replica.encode()).hexdigest()[:8]}-"


class SessionTags:
    """This supervisor's tag, put on the session ids it gives out and taken off those it gets."""

    def __init__(self, replica: str) -> None:
        self.tag = session_tag(replica)
        self._tag_bytes = self.tag.encode()

    def strip(self, tagged: str) -> str | None:
        """The SDK's id inside a session id this supervisor gave out; None for any other."""
        if tagged.startswith(self.tag):
            return tagged[len(self.tag) :]
        return None

    def tagging(self, send: Any) -> Any:
        """A `send` that tags the session id of the answer."""
        tag = self._tag_bytes

        async def send_tagged(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", ())
                for n, (name, value) in enumerate(headers):
                    if name == SESSION_HEADER:  # the SDK and the lean path write it lower-case
                        tagged = list(headers)
                        tagged[n] = (name, tag + value)
                        message = {**message, "headers": tagged}
                        break
            await send(message)

        return send_tagged


def untag_scope(scope: dict[str, Any], session: str) -> None:
    """Put the SDK's own id in the request's `Mcp-Session-Id` header, where the SDK reads it."""
    headers = scope["headers"]
    if not isinstance(headers, list):  # Hypercorn's is a list, changed in place
        headers = scope["headers"] = list(headers)
    for n, (name, _value) in enumerate(headers):
        if name.lower() == SESSION_HEADER:
            headers[n] = (name, session.encode("latin-1"))
            return
