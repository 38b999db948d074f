"""Whether an app has a UI, from what its catalog shows (pure)."""

from __future__ import annotations

from typing import Any

from actors.catalog import Catalog
from web.uiview import catalog_has_ui, is_ui_mime

OBJECT = {"type": "object"}


def tool(name: str, **meta: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "inputSchema": OBJECT}
    if meta:
        found["_meta"] = {"ui": meta}
    return found


UI = {"uri": "ui://a/view.html", "mimeType": "text/html;profile=mcp-app"}


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
    assert catalog_has_ui(Catalog(tools=(tool("show", resourceUri=UI["uri"]),), resources=(UI,)))
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
