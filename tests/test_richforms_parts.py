"""The pure parts of rich forms (actors/richforms.py), and the read-stream wrapper that answers
an app's `openai/elicitation/create` beside the SDK session (actors/apps/customrequests.py),
on memory streams."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
import trio
import trio.testing
from mcp.shared.message import SessionMessage

from actors.apps.customrequests import answering
from actors.asking import AnswerRefused, check_answer
from actors.richforms import METHOD, FormUnsupported, form_of, is_rich, unsupported

OPTIONS = [{"uri": "cad://a", "name": "a"}, {"uri": "cad://b", "name": "b"}]
PICK = {
    "type": "object",
    "properties": {
        "parts": {
            "type": "array",
            "items": {"type": "string", "format": "uri"},
            "x-openai-input": {"type": "resource", "selection": "explicit", "options": OPTIONS},
        },
        "one": {
            "type": "string",
            "format": "uri",
            "x-openai-input": {"type": "file", "options": OPTIONS},  # the deprecated spelling
        },
    },
}


def rich(schema: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28 params: an empty core schema, the real one in `_meta`."""
    return {
        "mode": "form",
        "message": "pick",
        "requestedSchema": {"type": "object", "properties": {}},
        "_meta": {"openai/elicitation": {"requestedSchema": schema}},
    }


def test_both_eras_ask_the_same_rich_form() -> None:
    legacy = form_of(METHOD, {"mode": "form", "message": "pick", "requestedSchema": PICK})
    modern = form_of("elicitation/create", rich(PICK))
    assert legacy == modern
    assert modern.rich
    assert modern.schema == PICK
    assert is_rich("elicitation/create", rich(PICK))
    plain = form_of("elicitation/create", {"message": "hi", "requestedSchema": {"type": "object"}})
    assert not plain.rich
    assert not is_rich("elicitation/create", {"message": "hi"})


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"x-openai-input": {"type": "color", "options": []}},
            "field 'f' asks for input type 'color', which is not supported",
        ),
        (
            {"oneOf": [{"const": "a", "title": "A", "x-openai-preview": {"src": "http://x/a"}}]},
            "field 'f': the thumbnail of option 'a' is at http:",
        ),
        (
            {
                "format": "uri",
                "x-openai-input": {
                    "type": "resource",
                    "options": [
                        {
                            "uri": "cad://a",
                            "name": "a",
                            "_meta": {"openai/thumbnail": {"src": "javascript:x"}},
                        }
                    ],
                },
            },
            "the thumbnail of resource 'cad://a' is at javascript:",
        ),
        ({"x-color-wheel": True}, "field 'f' (x-color-wheel): Extra inputs are not permitted"),
    ],
)
def test_a_form_that_cannot_be_shown_whole_is_unsupported(
    change: dict[str, Any], said: str
) -> None:
    schema = {"type": "object", "properties": {"f": {"type": "string", **change}}}
    reason = unsupported(schema)
    assert reason is not None
    assert said in reason
    with pytest.raises(FormUnsupported, match="this host cannot show the form"):
        form_of("elicitation/create", rich(schema))


def test_a_rich_form_without_its_schema_is_unsupported() -> None:
    with pytest.raises(FormUnsupported, match="no requestedSchema"):
        form_of("elicitation/create", {"message": "x", "_meta": {"openai/elicitation": {}}})
    with pytest.raises(FormUnsupported, match="only with forms"):
        form_of(METHOD, {"mode": "url", "url": "https://x", "message": "x"})


def test_chosen_resources_must_be_among_the_options() -> None:
    ok = check_answer(PICK, "accept", {"parts": ["cad://b"], "one": "cad://a"})
    assert ok["content"] == {"parts": ["cad://b"], "one": "cad://a"}
    with pytest.raises(AnswerRefused) as stranger:
        check_answer(PICK, "accept", {"parts": ["cad://a", "cad://z"]})
    assert stranger.value.status == 400
    assert "parts: 'cad://z' is not one of the resources offered" in str(stranger.value)


async def test_the_wrapper_answers_its_methods_and_passes_the_rest() -> None:
    to_session, from_app = anyio.create_memory_object_stream[Any](10)
    to_app, sent = anyio.create_memory_object_stream[Any](10)
    asked: list[tuple[str, dict[str, Any]]] = []
    release = trio.Event()

    async def handler(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params))
        if params.get("message") == "fail":
            raise FormUnsupported("no such form")
        if params.get("message") == "wait":
            await release.wait()
        return {"action": "accept", "content": {"x": "y"}}

    def request(rid: int, message: str) -> SessionMessage:
        params = {"message": message}
        return SessionMessage(
            types.JSONRPCRequest(jsonrpc="2.0", id=rid, method=METHOD, params=params)
        )

    async with answering(_Pair(from_app, to_app), [METHOD], handler) as (read, write):
        assert write is to_app
        ping = SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=9, method="ping"))
        cancel = types.JSONRPCNotification(
            jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3}
        )
        for item in (
            request(1, "ok"),
            request(2, "fail"),
            request(3, "wait"),
            ping,
            SessionMessage(cancel),
        ):
            await to_session.send(item)
        assert (await read.receive()).message.method == "ping"  # passed on, ours taken out
        assert (await read.receive()).message.method == "notifications/cancelled"
        with trio.fail_after(5):
            answers = [(await sent.receive()).message for _ in range(2)]
        by_id = {answer.id: answer for answer in answers}
        assert by_id[1].result == {"action": "accept", "content": {"x": "y"}}
        assert by_id[2].error.code == types.INVALID_PARAMS  # the form is unsupported
        assert by_id[2].error.message == "no such form"
        await trio.testing.wait_all_tasks_blocked()
        release.set()  # request 3 was cancelled by the app: it is never answered
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(anyio.WouldBlock):
            sent.receive_nowait()
    assert [m for m, _ in asked] == [METHOD] * 3


class _Pair:
    """A transport of two memory streams, as an SDK `Client` enters one."""

    def __init__(self, read: Any, write: Any) -> None:
        self.streams = (read, write)

    async def __aenter__(self) -> tuple[Any, Any]:
        return self.streams

    async def __aexit__(self, *exc: object) -> None:
        return None
