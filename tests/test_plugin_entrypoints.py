"""Entry points (`_meta["openai/ui"].entrypoints`) and deep links: the pure rules (titles, icons,
which tools are entry points, what a deep link may be), then over HTTP against apps built with
the OpenAI extensions SDK run by a real `mcpapps run` (both eras): the listing, a global entry
point opened with a deep link, a thread one opened in a chat, and each refusal."""

from __future__ import annotations

from typing import Any

import pytest

from actors.catalog import Catalog
from tests.support.extensions import extensions_project
from tests.support.frontdoor import http
from tests.support.helpers import Project
from tests.support.running import supervisor_running
from web.plugins.entrypoints import BadDeepLink, deep_link, entry_points, usable_icon
from web.routes import landing

PNG = "data:image/png;base64,iVBORw0KGgo="
SVG = "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4="


def ui_tool(name: str, *kinds: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "inputSchema": {"type": "object"},
        "_meta": {
            "ui": {"resourceUri": f"ui://t/{name}", "visibility": ["model"]},
            "openai/ui": {"entrypoints": [{"type": k} for k in kinds]},
        },
        **fields,
    }


def test_titles_come_from_title_then_annotations_then_name() -> None:
    catalog = Catalog(
        tools=(
            ui_tool("a", "global", title="Alpha", annotations={"title": "not this"}),
            ui_tool("b", "global", annotations={"title": "Beta"}),
            ui_tool("c", "global"),
        )
    )
    found = entry_points("app", catalog, {"a": "p.a", "b": "p.b", "c": "p.c"})
    assert [(e.public_name, e.title) for e in found] == [
        ("p.a", "Alpha"),
        ("p.b", "Beta"),
        ("p.c", "c"),
    ]


def test_icons_come_from_the_tool_then_the_server_then_a_fallback() -> None:
    tools = (
        ui_tool("own", "global", icons=[{"src": "https://x.example/i.png"}, {"src": PNG}]),
        ui_tool("plain", "thread"),
    )
    with_server = Catalog(tools=tools, server_info={"name": "s", "icons": [{"src": SVG}]})
    found = {e.tool: e for e in entry_points("app", with_server, {"own": "own", "plain": "plain"})}
    assert found["own"].icon == {"src": PNG, "mimeType": "image/png"}  # https is skipped
    assert found["own"].icon_from == "tool"
    assert found["plain"].icon == {"src": SVG, "mimeType": "image/svg+xml"}
    assert found["plain"].icon_from == "server"
    bare = entry_points("app", Catalog(tools=tools[1:]), {"plain": "plain"})
    assert (bare[0].icon, bare[0].icon_from) == (None, "fallback")


def test_only_data_images_are_icons() -> None:
    assert usable_icon([{"src": "javascript:alert(1)"}, {"src": "data:text/html,<b>x</b>"}]) is None
    assert usable_icon([{"src": "http://x/i.png"}, {"src": "data:image/gif;base64,R0"}]) == {
        "src": "data:image/gif;base64,R0",
        "mimeType": "image/gif",
    }
    assert usable_icon("not a list") is None


def test_entry_points_are_ui_tools_with_a_public_name_global_and_thread_only() -> None:
    no_view = {
        "name": "nv",
        "_meta": {"openai/ui": {"entrypoints": [{"type": "global"}]}},
    }
    catalog = Catalog(
        tools=(
            ui_tool("both", "thread", "global", "global"),
            ui_tool("file", "file"),
            no_view,
            ui_tool("unnamed", "global"),
        )
    )
    found = entry_points("app", catalog, {"both": "x.both", "file": "x.file", "nv": "x.nv"})
    assert [(e.public_name, e.kind) for e in found] == [("x.both", "global"), ("x.both", "thread")]


@pytest.mark.parametrize(
    ("path", "url"),
    [(None, "/"), ("", "/"), ("/parts?tag=bolt&sort=asc", "/parts?tag=bolt&sort=asc")],
)
def test_a_deep_link_is_an_app_relative_url(path: str | None, url: str) -> None:
    assert deep_link(path) == url


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/parts#top", "has a fragment ('#top')"),
        ("parts", "does not start with '/'"),
        ("https://evil.example/", "does not start with '/'"),
        ("//evil.example/x", "names another host"),
        ("/a\nb", "control character"),
        ("/" + "a" * 3000, "at most 2048"),
    ],
)
def test_a_deep_link_that_is_not_one_is_refused(path: str, said: str) -> None:
    with pytest.raises(BadDeepLink) as refused:
        deep_link(path)
    assert said in refused.value.message
    assert refused.value.code == "bad_deep_link"


async def test_entry_points_over_http(project: Project) -> None:
    extensions_project(project, "entry-refuses-empty")
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        listed = (await client.get("/apps/entrypoints")).json()["entrypoints"]
        by_name = {(e["publicName"], e["type"]): e for e in listed}
        for app_id in ("ext", "ext26"):  # both eras
            catalog = by_name[(f"{app_id}.parts_catalog", "global")]
            assert catalog["title"] == "Parts catalog"
            assert catalog["iconFrom"] == "tool"
            assert catalog["resourceUri"] == "ui://extensions/entry"
            tray = by_name[(f"{app_id}.parts_tray", "thread")]
            assert (tray["title"], tray["iconFrom"]) == ("Parts tray", "server")
            assert tray["icon"]["src"].startswith("data:image/svg+xml;base64,")
        threads = (await client.get("/apps/entrypoints?type=thread")).json()["entrypoints"]
        assert {e["type"] for e in threads} == {"thread"}
        assert (await client.get("/apps/entrypoints?type=file")).status_code == 400

        # A global entry point: its tool (for the model only) called with {}, the deep link.
        opened = await client.post(
            "/apps/entrypoints/ext.parts_catalog/open", json={"path": "/parts?tag=bolt"}
        )
        assert opened.status_code == 200, opened.text
        body = opened.json()
        assert body["result"]["structuredContent"] == {"opened": "catalog", "parts": 5}
        assert body["hostContext"] == {"openai/deepLink": {"url": "/parts?tag=bolt"}}
        # A link followed to a view already open: the host context, the tool not called.
        link = await client.get("/apps/entrypoints/ext.parts_catalog?path=%2Fparts%2Fhex-bolt")
        assert link.json()["hostContext"] == {"openai/deepLink": {"url": "/parts/hex-bolt"}}
        assert "result" not in link.json()
        bad = await client.get("/apps/entrypoints/ext.parts_catalog", params={"path": "/a#b"})
        assert bad.json()["error"]["code"] == "bad_deep_link"
        plain = (await client.post("/apps/entrypoints/ext26.parts_catalog/open")).json()
        assert plain["hostContext"] == {"openai/deepLink": {"url": "/"}}

        # A thread entry point opens in a chat, whose id its call carries.
        tray = await client.post(
            "/apps/entrypoints/ext.parts_tray/open", json={"sessionId": "chat-one"}
        )
        assert tray.status_code == 200, tray.text
        said_back = tray.json()["result"]["structuredContent"]
        assert said_back == {"opened": "tray", "session": "chat-one"}
        assert tray.json()["hostContext"] == {}

        async def refused(name: str, body: Any, status: int, code: str) -> str:
            answer = await client.post(f"/apps/entrypoints/{name}/open", json=body)
            assert answer.status_code == status, answer.text
            error = answer.json()["error"]
            assert error["code"] == code
            return str(error["message"])

        said = await refused("ext.parts_catalog", {"path": "/parts#top"}, 400, "bad_deep_link")
        assert "has a fragment" in said
        said = await refused("ext.parts_tray", {}, 404, "unknown_entry_point")
        assert "no global entry point 'ext.parts_tray'" in said
        said = await refused("ext.parts_tray", {"type": "thread"}, 400, "bad_request")
        assert "sessionId" in said
        said = await refused("ext.parts_tray", {"sessionId": "s", "path": "/x"}, 400, "bad_request")
        assert "global entry point" in said
        said = await refused("bad-entry-refuses-empty.pick_part", {}, 409, "entry_point_refused")
        assert "requires part" in said
        assert "must accept {}" in said
        said = await refused("bad-entry-refuses-empty.broken_entry", {}, 409, "entry_point_refused")
        assert "no part is chosen yet" in said
        assert (await client.post("/apps/entrypoints/x/open", json=[1])).status_code == 400


def test_an_entry_point_link_survives_logging_in() -> None:
    assert landing({"token": "t", "entry": "ext.parts_catalog", "path": "/parts?tag=bolt"}) == (
        "/?entry=ext.parts_catalog&path=%2Fparts%3Ftag%3Dbolt"
    )
    assert landing({"session": "chat-1", "tab": "ext.parts_tray"}) == (
        "/?session=chat-1&tab=ext.parts_tray"
    )
