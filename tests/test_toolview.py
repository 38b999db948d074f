"""What the control page shows of an app's tools and UI (pure)."""

from __future__ import annotations

from typing import Any

from actors.tooltable import AppTools, build_tool_table
from actors.upstream import Catalog
from web.toolview import app_tools, catalog_has_ui, is_ui_mime

OBJECT = {"type": "object"}


def tool(name: str, **meta: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "inputSchema": OBJECT}
    if meta:
        found["_meta"] = {"ui": meta}
    return found


UI = {"uri": "ui://a/view.html", "mimeType": "text/html;profile=mcp-app"}


def test_each_tool_lands_in_one_group_with_its_reason() -> None:
    mine = Catalog(
        tools=(
            tool("show", resourceUri="ui://a/view.html"),
            tool("refresh", resourceUri="ui://a/view.html", visibility=["app"]),
            {"name": "bad_schema", "inputSchema": {"type": "string"}},
            tool("taken"),
            tool("has space"),
        ),
        resources=(UI,),
    )
    other = Catalog(tools=(tool("taken"),))
    table = build_tool_table([AppTools("b", "x.", other.tools), AppTools("a", "x.", mine.tools)])
    view = app_tools("a", mine, table, manifest_has_ui=True, running=True)
    assert view["hasUi"] is True
    assert view["modelVisible"] == [
        {"name": "show", "publicName": "x.show", "resourceUri": "ui://a/view.html"}
    ]
    assert view["appOnly"] == [{"name": "refresh", "resourceUri": "ui://a/view.html"}]
    kinds = {t["name"]: t["kind"] for t in view["notOffered"]}
    assert kinds == {"bad_schema": "schema", "taken": "collision", "has space": "name"}
    taken = next(t for t in view["notOffered"] if t["name"] == "taken")
    assert "app 'b' already offers" in taken["reason"]
    assert view["warnings"] == []


def test_a_ui_is_what_the_catalog_shows_not_what_the_manifest_claims() -> None:
    wrong_mime = Catalog(
        tools=(tool("show", resourceUri="ui://a/view.html"),),
        resources=({"uri": "ui://a/view.html", "mimeType": "text/html"},),
    )
    unlisted = Catalog(tools=(tool("show", resourceUri="ui://a/other.html"),), resources=(UI,))
    not_ui_scheme = Catalog(
        tools=(tool("show", resourceUri="https://a/view.html"),),
        resources=({"uri": "https://a/view.html", "mimeType": UI["mimeType"]},),
    )
    for catalog in (wrong_mime, unlisted, not_ui_scheme, Catalog()):
        assert not catalog_has_ui(catalog)
        view = app_tools("a", catalog, build_tool_table([]), manifest_has_ui=True, running=True)
        assert view["hasUi"] is False
        assert view["warnings"] == [
            "app 'a' says hasUi in its manifest but serves no UI: no tool's _meta.ui.resourceUri"
            " names a ui:// resource of type text/html;profile=mcp-app"
        ]
    # Not running: nothing is known yet, so nothing is claimed wrong.
    view = app_tools("a", Catalog(), build_tool_table([]), manifest_has_ui=True, running=False)
    assert view["warnings"] == []
    legacy = Catalog(
        tools=({"name": "s", "_meta": {"ui/resourceUri": UI["uri"]}},), resources=(UI,)
    )
    assert catalog_has_ui(legacy)


def test_the_ui_mime_type_is_exact_but_not_case_sensitive() -> None:
    assert is_ui_mime("text/html;profile=mcp-app")
    assert is_ui_mime("Text/HTML;Profile=MCP-App")
    assert not is_ui_mime("text/html; profile=mcp-app")
    assert not is_ui_mime("text/html")
    assert not is_ui_mime(None)
