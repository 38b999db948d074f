"""The model-visible tool table and the bridge's formatting: pure functions, no processes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.arguments import ArgumentError, parse_arguments
from actors.chat.bridge import format_result
from actors.tooltable import (
    MODEL_NAME,
    AppTools,
    build_tool_table,
    model_alias,
    model_visible,
    schema_problem,
    ui_resource_uri,
)

OBJECT = {"type": "object", "properties": {}}


def tool(name: str, schema: object = OBJECT, **meta: object) -> dict[str, object]:
    raw: dict[str, object] = {"name": name, "description": f"{name} tool", "inputSchema": schema}
    if meta:
        raw["_meta"] = meta
    return raw


def test_public_names_are_prefix_plus_name() -> None:
    table = build_tool_table([AppTools("grocery", "grocery.", (tool("get_stores"),))])
    [only] = table.tools
    assert only.public_name == "grocery.get_stores"
    assert only.alias == "grocery_get_stores"
    assert only.registration == "mcpapp:grocery"
    assert only.name == "get_stores"
    assert table.find("grocery.get_stores") is only
    assert table.find("grocery_get_stores") is only
    assert table.find("get_stores") is None


def test_collision_first_discovered_keeps_the_name() -> None:
    table = build_tool_table(
        [AppTools("a", "x.", (tool("t"),)), AppTools("b", "x.", (tool("t"), tool("u")))]
    )
    assert [(t.public_name, t.app_id) for t in table.tools] == [("x.t", "a"), ("x.u", "b")]
    assert table.warnings == {
        "b": (
            "tool 'x.t' of app 'b' is not offered to the model: app 'a' already offers a tool of"
            " that name and keeps it (the app discovered first does); set tool_name_prefix in"
            " [apps.entries.b] to tell them apart",
        )
    }


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (None, "it has no inputSchema"),
        ([], "its inputSchema is not a JSON object"),
        ({"type": "string"}, "its inputSchema has type 'string', not 'object'"),
        ({"properties": {}}, "its inputSchema has type None, not 'object'"),
    ],
)
def test_strict_schema(schema: object, why: str) -> None:
    raw = tool("bad", schema)
    if schema is None:
        del raw["inputSchema"]
    table = build_tool_table([AppTools("a", "", (raw, tool("good")))])
    assert [t.public_name for t in table.tools] == ["good"]
    assert table.warnings["a"] == (f"tool 'bad' of app 'a' is not offered to the model: {why}",)
    assert schema_problem(OBJECT) is None


def test_app_only_tools_are_hidden_without_a_warning() -> None:
    table = build_tool_table(
        [
            AppTools(
                "a",
                "",
                (
                    tool("app_only", ui={"visibility": ["app"]}),
                    tool("both", ui={"visibility": ["model", "app"]}),
                    tool("plain"),
                ),
            )
        ]
    )
    assert [t.public_name for t in table.tools] == ["both", "plain"]
    assert table.warnings == {}
    assert model_visible({"name": "x", "_meta": {"ui": {"visibility": "app"}}})  # not a list


def test_ui_links() -> None:
    assert ui_resource_uri(tool("t", ui={"resourceUri": "ui://a/b.html"})) == "ui://a/b.html"
    assert ui_resource_uri({"name": "t", "_meta": {"ui/resourceUri": "ui://flat"}}) == "ui://flat"
    assert ui_resource_uri(tool("t")) is None
    table = build_tool_table([AppTools("a", "", (tool("t", ui={"resourceUri": "ui://v"}),))])
    assert table.tools[0].ui_resource_uri == "ui://v"


def test_invalid_public_name_is_left_out() -> None:
    table = build_tool_table([AppTools("a", "p.", (tool("has space"), tool("x" * 127)))])
    assert table.tools == ()
    assert len(table.warnings["a"]) == 2
    assert "is not 1-128 characters" in table.warnings["a"][0]


def test_aliases_are_distinct_even_when_names_differ_only_in_dots() -> None:
    table = build_tool_table([AppTools("a", "", (tool("a.b"), tool("a_b")))])
    aliases = [t.alias for t in table.tools]
    assert len(set(aliases)) == 2
    assert table.find("a_b").name == "a_b"  # a public name beats an alias
    assert table.find("a.b").name == "a.b"


@given(st.from_regex(r"[A-Za-z0-9_.-]{1,128}", fullmatch=True))
def test_alias_is_always_model_safe_and_stable(public: str) -> None:
    alias = model_alias(public)
    assert MODEL_NAME.fullmatch(alias)
    assert model_alias(public) == alias
    if MODEL_NAME.fullmatch(public):
        assert alias == public


def test_long_alias_is_shortened_with_a_hash() -> None:
    long = "p." + "x" * 100
    alias = model_alias(long)
    assert len(alias) == 64
    assert re.fullmatch(r"p_x+_[0-9a-f]{8}", alias)
    assert model_alias("p." + "x" * 99 + "y") != alias


def test_parse_arguments() -> None:
    assert parse_arguments(None) == {}
    assert parse_arguments("") == {}
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments({"a": 1}) == {"a": 1}
    with pytest.raises(ArgumentError, match=r"^arguments must be a JSON object, got an array$"):
        parse_arguments("[1]")
    with pytest.raises(ArgumentError, match=r"^arguments must be a JSON object, got null$"):
        parse_arguments("null")
    with pytest.raises(
        ArgumentError, match=r"^not valid JSON: Expecting value at line 1 column 7$"
    ):
        parse_arguments('{"a": }')


def test_format_result_text_json_and_structured() -> None:
    result = {
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x://1", "text": "embedded"}},
        ],
        "structuredContent": {"n": 1},
    }
    assert format_result(result, app_id="a", tool="t", has_ui=False) == (
        'first\n\n{"type":"image","data":"AAAA","mimeType":"image/png"}\n\nembedded\n\n{"n":1}'
    )
    # A UI tool's structuredContent is for the browser, not the model.
    assert format_result(result, app_id="a", tool="t", has_ui=True) == (
        'first\n\n{"type":"image","data":"AAAA","mimeType":"image/png"}\n\nembedded'
    )


def test_format_result_error() -> None:
    result = {"content": [{"type": "text", "text": "no such store"}], "isError": True}
    assert format_result(result, app_id="grocery", tool="grocery.x", has_ui=False) == (
        "Error: tool 'grocery.x' of app 'grocery' failed: no such store"
    )
    assert format_result({"isError": True}, app_id="a", tool="t", has_ui=False) == (
        "Error: tool 't' of app 'a' failed: no details given"
    )


def test_an_alias_never_reaches_another_tools_public_name() -> None:
    """App one offers `a.b` (alias `a_b`); app two offers a tool really named `a_b`. A model
    calling the alias of `a.b` must reach `a.b`, and `a_b` must reach app two."""
    table = build_tool_table(
        [AppTools("one", "", (tool("a.b"),)), AppTools("two", "", (tool("a_b"),))]
    )
    dotted = table.find("a.b")
    plain = table.find("a_b")
    assert dotted is not None
    assert plain is not None
    assert (dotted.app_id, plain.app_id) == ("one", "two")
    assert plain.alias == "a_b"
    assert dotted.alias != "a_b"
    assert MODEL_NAME.fullmatch(dotted.alias)
    assert table.find(dotted.alias) is dotted
