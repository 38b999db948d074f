"""The front door's intake (web/intake.py): the `receive` a request's handler gets once the
front door has read its body."""

from __future__ import annotations

from typing import Any

from web.intake import Replaying


class _Client:
    """Hypercorn's side of a request whose body was read: the disconnect, when it comes."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self) -> dict[str, Any]:
        self.asked += 1
        return {"type": "http.disconnect"}


async def test_the_body_is_given_once_then_what_the_client_sends_next() -> None:
    client = _Client()
    receive = Replaying(b'{"jsonrpc":"2.0"}', client)
    assert await receive() == {
        "type": "http.request",
        "body": b'{"jsonrpc":"2.0"}',
        "more_body": False,
    }
    assert await receive() == {"type": "http.disconnect"}
    assert client.asked == 1


async def test_once_released_it_says_the_client_has_gone_and_holds_nothing_of_the_request() -> None:
    # The SDK keeps a session's opening request (and its `receive`) for the session's life.
    client = _Client()
    receive = Replaying(b"{}", client)
    receive.release()
    assert await receive() == {"type": "http.disconnect"}
    assert client.asked == 0
    assert all(getattr(receive, slot) is None for slot in Replaying.__slots__)
