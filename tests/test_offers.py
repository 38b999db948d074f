"""What `/mcp` offers, as pure functions: tool listings as the app gives them (under public
names), and the apps' prompts, resources and templates with their routing and collisions."""

from __future__ import annotations

from actors.offers import AppOffers, build_offers, template_pattern
from actors.tooltable import AppTools, build_tool_table, public_listing

SCHEMA = {"type": "object", "properties": {}}


def test_a_tool_listing_keeps_what_a_client_decides_by() -> None:
    raw = {
        "name": "delete_item",
        "title": "Delete an item",
        "description": "Deletes it.",
        "inputSchema": SCHEMA,
        "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        "annotations": {"readOnlyHint": False, "destructiveHint": True},
        "execution": {"taskSupport": "optional"},
        "icons": [{"src": "https://example.com/i.png"}],
        "_meta": {"vendor/x": 1},
    }
    [tool] = build_tool_table([AppTools("a", "a.", (raw,))]).tools
    assert tool.listing == {**raw, "name": "a.delete_item"}


def test_a_ui_tool_is_listed_without_its_ui_link_and_output_schema() -> None:
    """/mcp keeps a UI tool's structuredContent from the model, so it does not promise it."""
    raw = {
        "name": "show",
        "inputSchema": SCHEMA,
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "_meta": {"ui": {"resourceUri": "ui://a/view.html"}, "ui/resourceUri": "ui://a/view.html"},
    }
    assert public_listing(raw, "a.show") == {
        "name": "a.show",
        "inputSchema": SCHEMA,
        "annotations": {"readOnlyHint": True},
    }


def test_prompts_take_the_prefix_and_map_back() -> None:
    offers = build_offers(
        [
            AppOffers("a", "a.", prompts=({"name": "greet", "title": "Greet"},)),
            AppOffers("b", "b.", prompts=({"name": "greet"},)),
        ]
    )
    assert [p.listing for p in offers.prompts] == [
        {"name": "a.greet", "title": "Greet"},
        {"name": "b.greet"},
    ]
    found = offers.prompt("b.greet")
    assert found is not None
    assert (found.app_id, found.name) == ("b", "greet")
    assert offers.prompt("greet") is None


def test_resource_uris_stay_and_route_to_their_app() -> None:
    offers = build_offers(
        [
            AppOffers(
                "a",
                "a.",
                resources=({"uri": "ui://a/view.html", "name": "view"},),
                resource_templates=({"uriTemplate": "inv://stores/{id}/summary", "name": "s"},),
            ),
            AppOffers("b", "b.", resource_templates=({"uriTemplate": "docs://{+path}"},)),
        ]
    )
    assert [r.listing for r in offers.resources] == [{"uri": "ui://a/view.html", "name": "a.view"}]
    assert [t.listing["name"] for t in offers.templates if "name" in t.listing] == ["a.s"]
    assert offers.owner_of("ui://a/view.html") == "a"
    assert offers.owner_of("inv://stores/12/summary") == "a"
    assert offers.owner_of("inv://stores/12/extra/summary") is None  # {id}: one segment
    assert offers.owner_of("docs://guide/intro.md") == "b"  # {+path}: slashes too
    assert offers.owner_of("other://x") is None


def test_a_second_app_with_the_same_uri_or_prompt_name_is_left_out_with_a_warning() -> None:
    same = {"uri": "ui://shared/view.html", "name": "view"}
    offers = build_offers(
        [
            AppOffers("a", "", prompts=({"name": "p"},), resources=(same,)),
            AppOffers(
                "b",
                "",
                prompts=({"name": "p"},),
                resources=(same,),
                resource_templates=({"uriTemplate": "x://{id}"},),
            ),
            AppOffers("c", "", resource_templates=({"uriTemplate": "x://{id}"},)),
        ]
    )
    assert [p.app_id for p in offers.prompts] == ["a"]
    assert [r.app_id for r in offers.resources] == ["a"]
    assert [t.app_id for t in offers.templates] == ["b"]
    assert offers.owner_of("ui://shared/view.html") == "a"
    said = offers.warnings
    assert (
        "prompt 'p' of app 'b' is not offered on /mcp: app 'a' already offers one" in said["b"][0]
    )
    assert "tool_name_prefix in [apps.entries.b]" in said["b"][0]
    assert "resource 'ui://shared/view.html' of app 'b'" in said["b"][1]
    assert said["c"] == (
        "resource template 'x://{id}' of app 'c' is not offered on /mcp: app 'b' already offers"
        " one (URIs are offered unchanged)",
    )
    # The tool table carries them, and their warnings with the tools' own.
    table = build_tool_table([AppTools("a", "", (), prompts=({"name": "p"},))] * 2)
    assert [p.public_name for p in table.offers.prompts] == ["p"]


def test_template_shapes() -> None:
    assert template_pattern("a://{x}/b").fullmatch("a://1/b")
    assert not template_pattern("a://{x}/b").fullmatch("a://1/2/b")
    assert template_pattern("a://s{?q,r}").fullmatch("a://s?q=1&r=2")
    assert template_pattern("a://s{?q,r}").fullmatch("a://s")
    assert template_pattern("a://f{/p*}").fullmatch("a://f/x/y")
    assert template_pattern("a.b://{x}").fullmatch("a.b://1")
    assert not template_pattern("a.b://{x}").fullmatch("aXb://1")
