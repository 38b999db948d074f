"""The manifest: parsing, types, defaults and rules, as pure functions."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.model import envrefs
from supervisor.model.manifest import (
    Manifest,
    ManifestSyntaxError,
    camel,
    id_problem,
    make_definition,
    manifest_problems,
    manifest_to_json,
    normalize_transport,
    parse_manifest_text,
    structure_manifest,
)
from supervisor.model.policy import SupervisionPolicy


def rules(data: dict, environ: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    manifest, type_problems = structure_manifest(data)
    assert type_problems == []
    errors, warnings = manifest_problems(manifest, environ or {})
    return [why for _, why in errors], [why for _, why in warnings]


FULL = {
    "id": "grocery-inventory",
    "name": "Grocery Inventory Dashboard",
    "description": "Multi-store grocery inventory",
    "version": "1.0.0",
    "protocolVersion": "2025-06-18",
    "transport": "http",
    "command": "dotnet",
    "arguments": ["run", "--project", "x"],
    "workingDirectory": "src",
    "url": "https://localhost:5001/mcp",
    "headers": {"Authorization": "Bearer ${env:TOKEN}"},
    "auth": "oauth",
    "scopes": ["inventory.read"],
    "clientId": "grocery",
    "clientSecret": "${env:GROCERY_SECRET}",
    "environment": {"ASPNETCORE_ENVIRONMENT": "Development"},
    "hasUi": True,
    "uiResourceUri": "ui://grocery/store-dashboard.html",
    "toolNamePrefix": "grocery.",
    "startupTimeoutSeconds": 10,
    "requestTimeoutSeconds": 120,
    "tags": ["grocery", "retail"],
    "category": "data",
    "capabilities": ["tools", "resources", "prompts", "completions"],
    "iconUrl": "https://img.example/grocery.png",
    "author": "OpenClaw MCP App Demo",
    "license": "MIT",
    "homepageUrl": "https://github.com/example/demo",
    "onboardingSkill": "skills/setup/SKILL.md",
    "x-vendor": {"kept": True},
}


def test_serialization_round_trip_keeps_every_field_and_unknown_keys() -> None:
    manifest, found = structure_manifest(parse_manifest_text(json.dumps(FULL)))
    assert found == []
    assert manifest.has_ui is True
    assert manifest.metadata == {"x-vendor": {"kept": True}}
    written = manifest_to_json(manifest)
    assert written == FULL
    again, _ = structure_manifest(parse_manifest_text(json.dumps(written)))
    assert again == manifest


def test_minimal_manifest_gets_the_spec_defaults() -> None:
    manifest, found = structure_manifest({"id": "min", "command": "srv"})
    assert found == []
    assert manifest == Manifest(id="min", command="srv")
    assert manifest.transport == "stdio"
    assert manifest.version == "0.1.0"
    assert manifest.protocol_version == "2025-03-26"
    assert (manifest.startup_timeout_seconds, manifest.request_timeout_seconds) == (15, 60)
    assert manifest.capabilities == ("tools",)
    assert (manifest.arguments, manifest.headers, manifest.environment) == ((), {}, {})
    assert manifest.has_ui is False
    definition = make_definition(
        manifest, folder=Path("/apps/min"), protocol="auto", supervision=SupervisionPolicy()
    )
    assert definition.manifest.name == "min"  # name defaults to the id
    assert definition.manifest.tool_name_prefix == ""
    assert definition.manifest.working_directory == "/apps/min"  # the manifest's folder


def test_a_stdio_manifest_and_an_http_manifest_are_valid() -> None:
    assert rules({"id": "s", "command": "node", "arguments": ["server.js"]}) == ([], [])
    assert rules({"id": "h", "transport": "http", "url": "http://127.0.0.1:8000/mcp"}) == ([], [])


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("stdio", "stdio"),
        ("STDIO", "stdio"),
        ("http", "http"),
        ("HTTP", "http"),
        ("streamable-http", "http"),
        ("streamable_http", "http"),
        ("Streamable-HTTP", "http"),
        ("sse", "sse"),
        ("SSE", "sse"),
        ("websocket", None),
        ("", None),
    ],
)
def test_transport_spellings(written: str, read: str | None) -> None:
    assert normalize_transport(written) == read


def test_an_unsupported_transport_is_an_error_naming_the_allowed_ones() -> None:
    assert rules({"id": "x", "transport": "websocket"})[0] == [
        "'transport' \"websocket\" is not supported: use 'stdio', 'http', 'sse'"
        " ('streamable-http' is read as 'http')"
    ]


def test_an_sse_app_needs_an_absolute_http_url() -> None:
    assert rules({"id": "x", "transport": "sse", "url": "http://127.0.0.1:8000/sse"}) == ([], [])
    assert rules({"id": "x", "transport": "sse"})[0] == ["transport is 'sse' but no 'url' is given"]
    assert rules({"id": "x", "transport": "sse", "url": "/sse"})[0] == [
        "'url' \"/sse\" must be an absolute http:// or https:// URL, such as"
        " http://127.0.0.1:8000/sse"
    ]


def test_required_fields() -> None:
    assert rules({"command": "x"})[0] == [
        "'id' is required: give the app an id of 1 to 64 letters, digits, '.', '_' or '-',"
        " starting with a letter or digit"
    ]
    assert rules({"id": "x"})[0] == ["transport is 'stdio' but no 'command' is given"]
    assert rules({"id": "x", "command": "  "})[0] == [
        "transport is 'stdio' but no 'command' is given"
    ]
    assert rules({"id": "x", "transport": "http"})[0] == [
        "transport is 'http' but no 'url' is given"
    ]


@pytest.mark.parametrize("url", ["/mcp", "localhost:8000/mcp", "ftp://host/mcp", "http://", "x"])
def test_the_url_must_be_absolute_http(url: str) -> None:
    assert rules({"id": "x", "transport": "http", "url": url})[0] == [
        f"'url' {json.dumps(url)} must be an absolute http:// or https:// URL,"
        " such as http://127.0.0.1:8000/mcp"
    ]


def test_every_problem_is_reported_at_once() -> None:
    data = {
        "id": "bad id!",
        "transport": "http",
        "url": "nope",
        "startupTimeoutSeconds": "15",
        "requestTimeoutSeconds": 0,
        "arguments": "--flag",
        "hasUi": "yes",
        "uiResourceUri": "https://x/ui.html",
        "headers": {"Bad Header": "v"},
        "tags": ["a", 2],
    }
    manifest, found = structure_manifest(data)
    assert [(".".join(map(str, path)), why) for path, why in found] == [
        ("arguments", 'must be a list, got "--flag"'),
        ("has_ui", 'must be true or false, got "yes"'),
        ("startup_timeout_seconds", 'must be an integer from 1 to 600, got "15"'),
        ("request_timeout_seconds", "must be an integer from 1 to 3600, got 0"),
        ("tags.1", "must be a string, got 2"),
    ]
    # The fields with a wrong type are left at their defaults; the rules still see the rest.
    assert (manifest.startup_timeout_seconds, manifest.has_ui, manifest.url) == (15, False, "nope")
    errors, _ = manifest_problems(manifest, {})
    assert [key for key, _ in errors] == [
        ("id",),
        ("url",),
        ("headers", "Bad Header"),
        ("ui_resource_uri",),
    ]


def test_types_are_strict() -> None:
    cases = {
        "startupTimeoutSeconds": [1.5, True, "10"],
        "hasUi": [1, "true"],
        "arguments": ["a b", {"a": 1}],
        "environment": [["A=1"]],
        "description": [3],
    }
    for key, values in cases.items():
        for value in values:
            _, found = structure_manifest({"id": "x", "command": "c", key: value})
            assert len(found) == 1, (key, value)


def test_null_counts_as_not_given() -> None:
    manifest, found = structure_manifest({"id": "x", "command": "c", "description": None})
    assert found == []
    assert manifest.description == ""


def test_comments_and_trailing_commas_are_accepted() -> None:
    text = """
    // An app for the tests
    {
      "id": "commented", /* inline */
      "command": "python3",
      "arguments": ["-m", "server",],
    }
    """
    assert parse_manifest_text(text) == {
        "id": "commented",
        "command": "python3",
        "arguments": ["-m", "server"],
    }


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            '{\n  "id": "x",\n  "command": "c"\n  "url": 1\n}',
            "expected ',' or '}' but found '\"' at line 4, column 3",
        ),
        ('{"id": "x",', "the object that starts with '{' at line 1, column 1 is never closed"),
        ('{"id": "x"}}', "unexpected '}' after the end of the JSON value at line 1, column 12"),
        ('{"id": "x",,}', "stray ',' at line 1, column 12"),
        ('{"id" "x"}', "expected ':' but found '\"' at line 1, column 7"),
        ('{"id": tru}', "expected 'e' but found '}' at line 1, column 11"),
        ('{"timeout": 1e+}', "the number at line 1, column 13 is incomplete"),
        ('{"id": "x}', "the string at line 1, column 8 is never closed"),
        (
            '{\n  "description": "two\nlines"\n}',
            "the string at line 2, column 18 is never closed"
            " (write a line break inside a string as \\n)",
        ),
        ('{"id": "x", /* note', "the comment at line 1, column 13 is never closed"),
        ('{"id": @}', "expected a value but found '@' at line 1, column 8"),
        ("// nothing but a comment", "there is no JSON value, only blanks or comments"),
        (
            '{"a": ' + "[" * 40 + "]" * 40 + "}",
            "it nests more than 32 levels deep at line 1, column 38",
        ),
    ],
)
def test_invalid_json_is_reported_with_line_and_column(text: str, where: str) -> None:
    with pytest.raises(ManifestSyntaxError) as caught:
        parse_manifest_text(text)
    assert str(caught.value) == f"is not valid JSON: {where}"


@settings(max_examples=500)
@given(st.text(max_size=300))
def test_any_text_parses_to_an_object_or_gives_a_syntax_error(text: str) -> None:
    try:
        result: object = parse_manifest_text(text)
    except ManifestSyntaxError as error:
        result = error
    if not isinstance(result, dict):
        message = str(result)
        # Every syntax error says where, but for the three that concern the whole text.
        assert (
            re.search(r"at line \d+, column \d+", message)
            or message
            in (
                "is empty: write a JSON object with at least an 'id'",
                "is not valid JSON: there is no JSON value, only blanks or comments",
            )
            or message.startswith("must hold one JSON object {...}, not ")
        ), message


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from([*json.loads(json.dumps(FULL)).keys(), "Command", "metadata", "x"])


@settings(max_examples=500)
@given(st.dictionaries(KEYS, JSON_VALUES, max_size=8))
def test_any_object_gives_a_manifest_and_problems_never_an_exception(data: dict) -> None:
    manifest, found = structure_manifest(data)
    for path, why in found:
        assert path[0] in data or camel(str(path[0])) in data
        assert why.startswith("must be")
    manifest_problems(manifest, {}, skip={str(p[0]) for p, _ in found})


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "is empty: write a JSON object with at least an 'id'"),
        ("  \n", "is empty: write a JSON object with at least an 'id'"),
        ("[1, 2]", "must hold one JSON object {...}, not a list"),
        ('"x"', "must hold one JSON object {...}, not a string"),
    ],
)
def test_a_manifest_that_is_not_an_object(text: str, why: str) -> None:
    with pytest.raises(ManifestSyntaxError) as caught:
        parse_manifest_text(text)
    assert str(caught.value) == why


def test_a_repeated_key_takes_its_last_value_as_in_javascript() -> None:
    assert parse_manifest_text('{"id": "a", "id": "b"}') == {"id": "b"}


def test_unknown_keys_are_kept_and_a_misspelt_field_is_flagged() -> None:
    from supervisor.model.manifest import unknown_key_warnings

    manifest, found = structure_manifest(
        {"id": "x", "Command": "c", "startupTimeout": 5, "x-extra": 1}
    )
    assert found == []
    assert manifest.command is None  # keys are case-sensitive
    assert manifest.metadata == {"Command": "c", "startupTimeout": 5, "x-extra": 1}
    assert unknown_key_warnings(manifest) == [
        (("Command",), "is not a manifest field and is ignored (did you mean 'command'?)"),
        (
            ("startupTimeout",),
            "is not a manifest field and is ignored (did you mean 'startupTimeoutSeconds'?)",
        ),
    ]


# -- id rules -------------------------------------------------------------------------------

VALID_ID = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


@given(VALID_ID)
def test_ids_of_the_allowed_characters_are_valid(app_id: str) -> None:
    assert id_problem(app_id) is None


@given(VALID_ID, st.characters(exclude_characters=string.ascii_letters + string.digits + "._-"))
def test_any_other_character_makes_an_id_invalid(app_id: str, bad: str) -> None:
    for candidate in (bad + app_id, app_id + bad, app_id[:1] + bad + app_id[1:]):
        assert id_problem(candidate) is not None


@given(VALID_ID, st.sampled_from("._-"))
def test_an_id_must_start_with_a_letter_or_digit(app_id: str, first: str) -> None:
    assert id_problem(first + app_id) is not None


@given(st.text(alphabet=string.ascii_lowercase, min_size=65, max_size=200))
def test_an_id_has_at_most_64_characters(app_id: str) -> None:
    assert id_problem(app_id) is not None
    assert id_problem(app_id[:64]) is None


def test_the_empty_id_is_invalid() -> None:
    assert id_problem("") is not None


# -- the other rules -------------------------------------------------------------------------


def test_the_ui_resource_uri_must_be_a_ui_uri() -> None:
    assert rules({"id": "x", "command": "c", "uiResourceUri": "ui://a/b.html"}) == ([], [])
    assert rules({"id": "x", "command": "c", "uiResourceUri": "https://a/b.html"})[0] == [
        "'uiResourceUri' \"https://a/b.html\" must start with ui://"
    ]


@pytest.mark.parametrize("prefix", ["grocery.", "a_b-c.", "", "x" * 64])
def test_tool_name_prefixes_that_keep_names_valid(prefix: str) -> None:
    assert rules({"id": "x", "command": "c", "toolNamePrefix": prefix}) == ([], [])


@pytest.mark.parametrize("prefix", ["grocery/", "my app.", "ä.", "x" * 65])
def test_tool_name_prefixes_that_would_break_tool_names(prefix: str) -> None:
    [error] = rules({"id": "x", "command": "c", "toolNamePrefix": prefix})[0]
    assert error.startswith(f"'toolNamePrefix' {json.dumps(prefix)} must be at most 64 letters")


@pytest.mark.parametrize("version", ["1.0.0", "0.1.0-alpha.1", "2.3.4+build.5"])
def test_semantic_versions_pass(version: str) -> None:
    assert rules({"id": "x", "command": "c", "version": version}) == ([], [])


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "latest", "01.0.0"])
def test_other_versions_are_a_warning_not_an_error(version: str) -> None:
    assert rules({"id": "x", "command": "c", "version": version}) == (
        [],
        [f"'version' {json.dumps(version)} is not a semantic version (such as 1.2.0)"],
    )


def test_headers_are_checked() -> None:
    errors, _ = rules(
        {
            "id": "x",
            "transport": "http",
            "url": "http://h/mcp",
            "headers": {"X-Key": "a", "x-key": "b", "Bad Name": "c", "X-Crlf": "a\r\nInjected: 1"},
        }
    )
    assert errors == [
        '\'headers\' "x-key" repeats "X-Key": header names are case-insensitive, keep one',
        "'headers' \"Bad Name\" is not a valid HTTP header name",
        "'headers' \"X-Crlf\" has a line break or NUL in its value",
    ]


def test_env_references_in_headers_and_environment() -> None:
    data = {
        "id": "x",
        "command": "c",
        "headers": {"Authorization": "Bearer ${env:API_TOKEN}"},
        "environment": {"HOME_DIR": "${env:HOME}/data", "BROKEN": "${env:1BAD}"},
    }
    assert rules(data, {"API_TOKEN": "t", "HOME": "/home/u"}) == (
        [
            "'environment' \"BROKEN\" '${env:1BAD}' is not a valid reference: write ${env:NAME}"
            " with a variable name of letters, digits and '_'"
        ],
        [],
    )
    errors, _ = rules(data, {"HOME": "/home/u"})
    assert errors[0] == (
        "'headers' \"Authorization\" refers to ${env:API_TOKEN}, but API_TOKEN is not set in the"
        " environment mcpapps runs in: set it there, or remove the reference"
    )
    assert envrefs.expand("Bearer ${env:API_TOKEN}", {"API_TOKEN": "t"}) == "Bearer t"
    assert envrefs.expand("a${env:X}b${env:X}", {"X": "-"}) == "a-b-"
    assert envrefs.expand("$HOME and ${HOME}", {}) == "$HOME and ${HOME}"  # not references


def test_relative_working_directories_resolve_against_the_manifest_folder() -> None:
    def resolved(written: str | None) -> str:
        manifest = Manifest(id="x", command="c", working_directory=written)
        definition = make_definition(
            manifest, folder=Path("/srv/apps/x"), protocol="auto", supervision=SupervisionPolicy()
        )
        return definition.manifest.working_directory or ""

    assert resolved(None) == "/srv/apps/x"
    assert resolved("bin") == "/srv/apps/x/bin"
    assert resolved("../shared") == "/srv/apps/shared"
    assert resolved("/opt/server") == "/opt/server"
