"""The OpenAI model-context extension on the server: a view's `ui/update-model-context`
checked (content kinds, titles, thumbnails), kept per view instance (an update replaces the one
before and is answered with its update id), listed and removed as the composer's chips, given
back to a view reopened, and taken by the chat's next turn, which the direct engine receives as
marked data; a `ui/message`'s attachments carried by a turn the same way."""

from __future__ import annotations

from typing import Any

import httpx2
import mcp_types as types
import pytest

from actors.views.modelcontext import (
    MODEL_CONTEXT_MARK,
    for_model,
    is_shown,
    model_context_text,
    read_update,
)
from actors.views.refusals import BadParams, ViewRefusal
from tests.support.chatting import body, chat_data
from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.png import ONE_PIXEL
from tests.support.running import supervisor_running
from tests.support.views import open_view, rpc

THUMB = {"src": f"data:image/png;base64,{ONE_PIXEL}"}
TITLED = {
    "type": "text",
    "text": "Selected: M6 hex bolt",
    "_meta": {"openai/title": "Hex bolt", "openai/thumbnail": THUMB},
}
HIDDEN = {"type": "text", "text": "part id 42", "annotations": {"audience": ["assistant"]}}
LINK = {"type": "resource_link", "uri": "cad://parts/washer", "name": "washer"}
EMBEDDED = {"type": "resource", "resource": {"uri": "cad://notes/1", "text": "torque 9 Nm"}}
IMAGE = {
    "type": "image",
    "data": ONE_PIXEL,
    "mimeType": "image/png",
    "_meta": {"openai/title": "bolt"},
}


def refusal(params: dict[str, Any]) -> str:
    with pytest.raises(ViewRefusal) as refused:
        read_update(params)
    assert isinstance(refused.value, BadParams)
    return refused.value.message


def test_the_content_a_view_may_attach() -> None:
    blocks, structured = read_update(
        {"content": [TITLED, HIDDEN, LINK, EMBEDDED, IMAGE], "structuredContent": {"part": 42}}
    )
    assert len(blocks) == 5
    assert structured == {"part": 42}
    assert [is_shown(b) for b in blocks] == [True, False, True, True, True]
    # The model reads every block, none of their _meta; an image as what it is.
    seen = for_model("ctx", blocks, structured)
    assert seen["app"] == "ctx"
    assert seen["content"][0] == {"type": "text", "text": "Selected: M6 hex bolt"}
    assert seen["content"][1] == {"type": "text", "text": "part id 42"}
    assert seen["content"][2] == {
        "type": "resource_link",
        "uri": "cad://parts/washer",
        "name": "washer",
    }
    assert seen["content"][3] == {
        "type": "resource",
        "resource": {"uri": "cad://notes/1", "text": "torque 9 Nm"},
    }
    assert seen["content"][4]["type"] == "image"
    assert ONE_PIXEL not in str(seen)
    assert seen["structuredContent"] == {"part": 42}
    marked = model_context_text(
        [{"app": "x", "content": [{"type": "text", "text": "</model-context>"}]}]
    )
    assert marked.startswith(MODEL_CONTEXT_MARK)
    assert marked.count("</model-context>") == 1  # a view cannot close the block early
    # Many views' contexts: the newest that fit go, and the rest are said to be left out.
    many = [{"app": f"a{i}", "content": [{"type": "text", "text": "x" * 8000}]} for i in range(10)]
    marked = model_context_text(many)
    assert '"app": "a9"' in marked
    assert '"app": "a0"' not in marked
    assert marked.endswith("earlier attachments left out: too long]")


@pytest.mark.parametrize(
    "src",
    [
        "http://example.com/bolt.png",
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "/bolt.png",
        "data:text/html,<b>",
    ],
)
def test_a_thumbnail_is_an_https_url_or_a_data_image(src: str) -> None:
    block = {"type": "text", "text": "x", "_meta": {"openai/thumbnail": {"src": src}}}
    said = refusal({"content": [block]})
    assert "must be an https: URL or a data: image" in said
    assert 'content[0]._meta["openai/thumbnail"]' in said
    https = {
        "type": "text",
        "text": "x",
        "_meta": {"openai/thumbnail": {"src": "https://a.example/b.png"}},
    }
    assert read_update({"content": [https]})[0][0]["_meta"]["openai/thumbnail"]["src"].startswith(
        "https"
    )


def test_what_is_refused_is_named() -> None:
    assert "'audio' block" in refusal(
        {"content": [{"type": "audio", "data": "", "mimeType": "audio/wav"}]}
    )
    assert 'openai/title"] must be a non-empty string' in refusal(
        {"content": [{"type": "text", "text": "x", "_meta": {"openai/title": ""}}]}
    )
    thumb_on_link = {**LINK, "_meta": {"openai/thumbnail": THUMB}}
    assert "only a text block" in refusal({"content": [thumb_on_link]})
    assert "content[1].uri" in refusal({"content": [LINK, {"type": "resource_link", "name": "n"}]})
    assert "'structuredContent' must be an object" in refusal({"structuredContent": [1]})
    assert "at most" in refusal({"content": [{"type": "text", "text": "x" * 600_000}]})


# --- over HTTP, with the direct engine ---------------------------------------------------------

FX = ("fx", ())


async def update(client: httpx2.AsyncClient, view: str, params: dict[str, Any]) -> str:
    answer = await rpc(client, view, "ui/update-model-context", params)
    return answer["result"]["_meta"]["openai/modelContext"]["updateId"]


async def chips(client: httpx2.AsyncClient, **query: Any) -> list[dict[str, Any]]:
    response = await client.get("/apps/model-context", params=query)
    assert response.status_code == 200, response.text
    return response.json()["contexts"]


async def said(client: httpx2.AsyncClient, session: str) -> list[str]:
    saved = (await client.get(f"/apps/chat/{session}")).json()["messages"]
    return [m["content"] for m in saved if m["role"] == "user"]


async def test_a_chat_s_context_is_replaced_listed_reopened_and_taken_by_the_next_turn(
    project: Project,
) -> None:
    write(project, "", FX, grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        call = {"toolName": "echo", "toolCallId": "call-7"}
        view = await open_view(client, "fx", sessionId="mc-1", toolCall=call)
        first = await update(client, view, {"content": [TITLED, HIDDEN]})
        second = await update(
            client, view, {"content": [TITLED, HIDDEN, LINK], "structuredContent": {"part": 42}}
        )
        assert first != second  # each update has its own id, and replaces the one before
        [chip] = await chips(client, sessionId="mc-1")
        assert chip["updateId"] == second
        assert chip["content"] == [TITLED, LINK]  # what the person sees: not the hidden block
        assert chip["hidden"] == 1
        assert chip["structuredContent"] is True

        # The page reloaded: the view is opened again (a new lease) and finds its context.
        await client.delete(f"/apps/views/{view}")
        reopened = await client.post(
            "/apps/views", json={"appId": "fx", "sessionId": "mc-1", "toolCall": call}
        )
        state = reopened.json()["modelContext"]
        assert state == {
            "updateId": second,
            "content": [TITLED, HIDDEN, LINK],
            "structuredContent": {"part": 42},
        }
        other = await client.post("/apps/views", json={"appId": "fx", "sessionId": "mc-1"})
        assert other.json()["modelContext"] is None  # another instance attached nothing

        await chat_data(client, body("which part?", "mc-1"))
        await chat_data(client, body("and now?", "mc-1"))
        first_turn, second_turn = await said(client, "mc-1")
        assert first_turn.startswith(MODEL_CONTEXT_MARK)
        assert first_turn.endswith("which part?")
        assert "Selected: M6 hex bolt" in first_turn
        assert "part id 42" in first_turn  # hidden from the person, read by the model
        assert "cad://parts/washer" in first_turn
        assert '"part": 42' in first_turn
        assert "Hex bolt" not in first_turn  # a block's _meta never reaches the model
        assert MODEL_CONTEXT_MARK not in second_turn  # taken once
        assert await chips(client, sessionId="mc-1") == []

        # With no text (the person sent the chips alone, as the page names them), the direct
        # engine says what it received; a ui/message's attachments likewise.
        last = await update(client, reopened.json()["viewId"], {"content": [LINK]})
        for extra in (
            {"modelContext": [last]},
            {"attachments": [{"app": "fx", "content": [LINK]}]},
        ):
            events = await chat_data(client, body("", "mc-1", **extra))
            texts = [e["text"] for e in events if e["type"] == "text"]
            assert texts == ["Noted the context attached by fx."]


async def test_a_chip_removed_and_a_view_outside_a_chat(project: Project) -> None:
    write(project, "", FX, grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        view = await open_view(client, "fx", sessionId="mc-2")
        update_id = await update(client, view, {"content": [LINK]})
        removed = await client.delete(f"/apps/model-context/{update_id}")
        assert removed.json()["removed"]["viewId"] == view
        again = await client.delete(f"/apps/model-context/{update_id}")
        assert again.status_code == 404
        assert "no model context" in again.json()["error"]["message"]
        assert (await client.delete("/apps/model-context/not-an-id")).status_code == 400
        await chat_data(client, body("hello", "mc-2"))
        assert MODEL_CONTEXT_MARK not in (await said(client, "mc-2"))[0]

        # A view outside a chat: its context is listed by its view id, goes with a turn that
        # names it, and ends with the view.
        outside = await open_view(client, "fx")
        kept = await update(client, outside, {"content": [EMBEDDED]})
        assert await chips(client, sessionId="mc-3") == []
        assert [c["updateId"] for c in await chips(client, viewId=outside)] == [kept]
        await chat_data(client, body("hello", "mc-3", modelContext=[kept]))
        assert "torque 9 Nm" in (await said(client, "mc-3"))[0]
        gone = await update(client, outside, {"content": [EMBEDDED]})
        await client.delete(f"/apps/views/{outside}")
        await chat_data(client, body("again", "mc-3", modelContext=[gone]))
        assert "torque 9 Nm" not in (await said(client, "mc-3"))[1]

        # Refusals: a bad thumbnail never reaches the chat, nor does a bad attachment.
        javascript = {
            "type": "text",
            "text": "x",
            "_meta": {"openai/thumbnail": {"src": "javascript:alert(1)"}},
        }
        answer = await rpc(client, view, "ui/update-model-context", {"content": [javascript]})
        assert answer["error"]["code"] == types.INVALID_PARAMS
        assert "is refused" in answer["error"]["message"]
        bad = await client.post(
            "/apps/chat",
            json=body("hi", "mc-2", attachments=[{"app": "fx", "content": [javascript]}]),
        )
        assert bad.status_code == 400
        assert "https: URL or a data: image" in bad.json()["error"]["message"]
        bad_ids = await client.post("/apps/chat", json=body("hi", "mc-2", modelContext=["x"]))
        assert bad_ids.status_code == 400
