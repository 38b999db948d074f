"""Discovery on real folders: scanning, filtering, overrides, inline apps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from supervisor.model.discovery import find_manifests
from supervisor.model.lifecycle import AppState
from tests.support.helpers import MANIFEST, Project, messages, stdio


def ids(project: Project) -> list[str | None]:
    return [app.id for app in project.discover().apps]


def test_disabled_apps_section_discovers_nothing(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config("[apps]\nenabled = false\n")
    discovery = project.discover()
    assert discovery.apps == ()
    assert [w.message for w in discovery.warnings] == [
        "apps.enabled is false: no app is discovered"
    ]


def test_missing_paths_warn_and_the_others_are_still_scanned(project: Project) -> None:
    project.manifest("apps/a", stdio("a"))
    project.config('[apps]\ndiscovery_paths = ["missing", "apps", "config.toml"]\n')
    discovery = project.discover()
    assert [app.id for app in discovery.apps] == ["a"]
    assert [(w.source, w.message) for w in discovery.warnings] == [
        (
            project.root / "missing",
            "discovery path does not exist; create it or remove it from apps.discovery_paths"
            " in the config",
        ),
        (project.config_path, "discovery path is not a folder; nothing found"),
    ]


def test_nested_scan_in_a_fixed_order(project: Project) -> None:
    for folder, app_id in [
        ("mcpapps/b", "b"),
        ("mcpapps/a/deeper/still", "a-still"),
        ("mcpapps/a", "a"),
        ("mcpapps/c/x", "c-x"),
        ("mcpapps/a/deeper", "a-deeper"),
        ("mcpapps/a0", "a0"),
    ]:
        project.manifest(folder, stdio(app_id))
    (project.root / "mcpapps/c/x/not-a-manifest.json").write_text("{}")
    # A folder's own manifest first, then its sub-folders by name.
    assert ids(project) == ["a", "a-deeper", "a-still", "a0", "b", "c-x"]
    assert all(app.state is AppState.VALIDATED for app in project.discover().apps)


def test_several_discovery_paths_in_the_order_given(project: Project) -> None:
    project.manifest("one/z", stdio("z"))
    project.manifest("two/a", stdio("a"))
    project.config('[apps]\ndiscovery_paths = ["two", "one"]\n')
    assert ids(project) == ["a", "z"]


def test_a_custom_manifest_name(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    (project.root / "mcpapps/b").mkdir()
    (project.root / "mcpapps/b/app.json").write_text('{"id": "b", "command": "c"}')
    project.config('[apps]\nmanifest_name = "app.json"\n')
    assert ids(project) == ["b"]


def test_a_symlink_loop_is_scanned_once(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.manifest("mcpapps/a/b", stdio("b"))
    os.symlink(project.root / "mcpapps", project.root / "mcpapps/a/b/loop")
    os.symlink(project.root / "mcpapps/a", project.root / "mcpapps/z-second-link")
    discovery = project.discover()
    assert [app.id for app in discovery.apps] == ["a", "b"]
    assert [(w.source.name, w.message) for w in discovery.warnings] == [
        (
            "loop",
            f"skipped: this link leads to {project.root / 'mcpapps'}, which is already scanned",
        ),
        (
            "z-second-link",
            f"skipped: this link leads to {project.root / 'mcpapps/a'}, which is already scanned",
        ),
    ]


def test_overlapping_discovery_paths_do_not_find_an_app_twice(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config('[apps]\ndiscovery_paths = ["mcpapps", "mcpapps/a"]\n')
    assert ids(project) == ["a"]


def test_a_linked_app_folder_is_followed(project: Project, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / MANIFEST).write_text('{"id": "linked", "command": "c"}')
    (project.root / "mcpapps").mkdir()
    os.symlink(elsewhere, project.root / "mcpapps/linked")
    [app] = project.discover().apps
    assert app.id == "linked"
    assert app.definition is not None
    # Relative paths of a linked app resolve in the folder it was found through.
    assert app.definition.manifest.working_directory == str(project.root / "mcpapps/linked")


def test_things_named_like_a_manifest_that_are_not_files_are_warned_about(
    tmp_path: Path,
) -> None:
    (tmp_path / "a" / MANIFEST).mkdir(parents=True)
    (tmp_path / "a" / MANIFEST / "b").mkdir()
    (tmp_path / "a" / MANIFEST / "b" / MANIFEST).write_text("{}")
    (tmp_path / "c").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "c" / MANIFEST)
    found, warnings = find_manifests([tmp_path], MANIFEST)
    assert found == [tmp_path / "a" / MANIFEST / "b" / MANIFEST]  # a folder is still scanned
    why = "is not a regular file (a folder, a broken link or a device), so it is not read as a"
    assert [(w.source, w.message) for w in warnings] == [
        (tmp_path / "a" / MANIFEST, f"{why} manifest"),
        (tmp_path / "c" / MANIFEST, f"{why} manifest"),
    ]


def test_a_discovery_path_listed_twice_is_scanned_once(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config('[apps]\ndiscovery_paths = ["mcpapps", "./mcpapps/"]\n')
    discovery = project.discover()
    assert [app.id for app in discovery.apps] == ["a"]
    assert [w.message for w in discovery.warnings] == [
        "discovery path is already scanned (listed twice, or inside another one)"
    ]


def test_a_discovery_path_inside_another_is_scanned_once(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.manifest("mcpapps/b", stdio("b"))
    project.config('[apps]\ndiscovery_paths = ["mcpapps/b", "mcpapps"]\n')
    discovery = project.discover()
    assert [app.id for app in discovery.apps] == ["b", "a"]
    assert [(w.source, w.message) for w in discovery.warnings] == [
        (project.root / "mcpapps/b", "skipped: already scanned as a discovery path of its own")
    ]


def test_a_discovery_path_that_loops_on_itself(project: Project) -> None:
    os.symlink(project.root / "loop", project.root / "loop")
    project.config('[apps]\ndiscovery_paths = ["loop"]\n')
    warning = project.discover().warnings[0]
    assert (warning.source, warning.message) == (
        project.root / "loop",
        "cannot read this discovery path (Too many levels of symbolic links); fix its permissions",
    )


def test_a_manifest_larger_than_a_mebibyte_is_not_read(project: Project) -> None:
    big = project.manifest("mcpapps/a", stdio("big", description="x" * (1024 * 1024)))
    [app] = project.discover().apps
    assert (app.source, messages(app)) == (big, ["is larger than 1024 KiB; is it a manifest?"])


def test_invalid_json_is_listed_with_its_reason_and_others_still_load(project: Project) -> None:
    bad = project.manifest("mcpapps/a-bad", '{"id": "bad",\n  "command": }')
    project.manifest("mcpapps/b-good", stdio("good"))
    bad_app, good_app = project.discover().apps
    assert bad_app.id is None
    assert bad_app.source == bad
    assert bad_app.state is AppState.DISCOVERED
    assert messages(bad_app) == [
        "is not valid JSON: expected a value but found '}' at line 2, column 14"
    ]
    assert good_app.state is AppState.VALIDATED


def test_a_manifest_that_is_not_utf8(project: Project) -> None:
    path = project.root / "mcpapps/a" / MANIFEST
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"id": "caf\xe9", "command": "c"}')
    [app] = project.discover().apps
    assert messages(app) == ["is not UTF-8 text (invalid continuation byte at byte offset 11)"]


def test_required_fields_and_unsupported_transport(project: Project) -> None:
    project.manifest("mcpapps/a", {"id": "no-command"})
    project.manifest("mcpapps/b", {"id": "no-url", "transport": "http"})
    project.manifest("mcpapps/c", {"id": "ws", "transport": "websocket", "url": "ws://x"})
    project.manifest("mcpapps/d", {"command": "c"})
    apps = project.discover().apps
    assert [(a.id, a.state, messages(a)) for a in apps] == [
        ("no-command", "Discovered", ["transport is 'stdio' but no 'command' is given"]),
        ("no-url", "Discovered", ["transport is 'http' but no 'url' is given"]),
        (
            "ws",
            "Discovered",
            [
                "'transport' \"websocket\" is not supported: use 'stdio', 'http', 'sse'"
                " ('streamable-http' is read as 'http')"
            ],
        ),
        (
            None,
            "Discovered",
            [
                "'id' is required: give the app an id of 1 to 64 letters, digits, '.', '_' or '-',"
                " starting with a letter or digit"
            ],
        ),
    ]
    assert all(a.definition is None for a in apps)


def test_a_duplicate_id_is_invalid_and_the_first_one_wins(project: Project) -> None:
    first = project.manifest("mcpapps/a", stdio("same"))
    project.manifest("mcpapps/b", stdio("same"))
    one, two = project.discover().apps
    assert one.source == first
    assert one.state is AppState.VALIDATED
    assert two.state is AppState.DISCOVERED
    assert messages(two) == [f"duplicate id 'same', already defined by mcpapps/a/{MANIFEST}"]


# -- allow / deny -----------------------------------------------------------------------------


def states(project: Project, config: str) -> dict[str | None, tuple[str, str | None]]:
    project.config(config)
    return {a.id: (a.state.value, a.disabled_reason) for a in project.discover().apps}


@pytest.fixture
def three_apps(project: Project) -> Project:
    for app_id in ("grocery-inventory", "weather", "Wiki"):
        project.manifest(f"mcpapps/{app_id}", stdio(app_id))
    return project


def test_legacy_semantics_with_an_empty_allowlist_allows_everything(three_apps: Project) -> None:
    assert set(states(three_apps, "").values()) == {("Validated", None)}


def test_strict_semantics_with_an_empty_allowlist_allows_nothing(three_apps: Project) -> None:
    reason = "not in the allowlist (apps.allowlist_semantics is 'strict' and apps.allow is empty)"
    result = states(three_apps, '[apps]\nallowlist_semantics = "strict"\n')
    assert set(result.values()) == {("Disabled", reason)}


def test_strict_semantics_with_an_allowlist(three_apps: Project) -> None:
    result = states(three_apps, '[apps]\nallowlist_semantics = "strict"\nallow = ["w*"]\n')
    assert result == {
        "grocery-inventory": ("Disabled", "not in the allowlist"),
        "weather": ("Validated", None),
        "Wiki": ("Validated", None),
    }


def test_an_invalid_allowlist_semantics_refuses_to_load(three_apps: Project) -> None:
    from supervisor.model.config import ConfigError

    three_apps.config('[apps]\nallowlist_semantics = "loose"\n')
    with pytest.raises(ConfigError):
        three_apps.discover()


def test_allow_and_deny_with_deny_winning(three_apps: Project) -> None:
    result = states(three_apps, '[apps]\nallow = ["*"]\ndeny = ["WEATH?R", "[xyz]*"]\n')
    assert result == {
        "grocery-inventory": ("Validated", None),
        "weather": ("Disabled", "matches deny pattern 'WEATH?R'"),
        "Wiki": ("Validated", None),
    }


def test_glob_patterns_in_allow(three_apps: Project) -> None:
    result = states(three_apps, '[apps]\nallow = ["grocery-*", "[vw]iki"]\n')
    assert result == {
        "grocery-inventory": ("Validated", None),
        "weather": ("Disabled", "not in the allowlist"),
        "Wiki": ("Validated", None),
    }


def test_an_entry_can_disable_one_app_and_wins_over_the_patterns(three_apps: Project) -> None:
    result = states(
        three_apps, '[apps]\ndeny = ["weather"]\n[apps.entries.weather]\nenabled = false\n'
    )
    assert result["weather"] == ("Disabled", "disabled in config entries")
    assert result["Wiki"] == ("Validated", None)


def test_a_disabled_app_keeps_its_definition(three_apps: Project) -> None:
    three_apps.config('[apps]\ndeny = ["wiki"]\n')
    app = three_apps.app("Wiki")
    assert app.state is AppState.DISABLED
    assert app.definition is not None


def test_an_invalid_manifest_stays_invalid_when_disabled(project: Project) -> None:
    project.manifest("mcpapps/broken", {"id": "broken"})
    project.config("[apps.entries.broken]\nenabled = false\n")
    app = project.app("broken")
    assert app.state is AppState.DISCOVERED  # Disabled is reached only from Validated
    assert app.disabled_reason == "disabled in config entries"
    assert messages(app) == ["transport is 'stdio' but no 'command' is given"]
    assert app.definition is None


# -- entries: overrides merged before validation ----------------------------------------------


def test_an_override_fixes_an_invalid_manifest(project: Project) -> None:
    project.manifest("mcpapps/a", {"id": "a", "startupTimeoutSeconds": 0})
    project.config(
        '[apps.entries.a]\ncommand = "uvx"\narguments = ["mcp-server-time"]\n'
        "startup_timeout_s = 30\n"
    )
    app = project.app("a")
    assert app.state is AppState.VALIDATED, messages(app)
    assert app.definition is not None
    manifest = app.definition.manifest
    assert (manifest.command, manifest.arguments) == ("uvx", ("mcp-server-time",))
    assert manifest.startup_timeout_seconds == 30


def test_overrides_replace_fields_and_merge_headers_and_environment(project: Project) -> None:
    project.manifest(
        "mcpapps/h",
        {
            "id": "h",
            "transport": "stdio",
            "command": "srv",
            "toolNamePrefix": "h.",
            "headers": {"Authorization": "old", "X-Keep": "1"},
            "environment": {"A": "1", "B": "1"},
        },
    )
    project.config(
        "[apps.entries.h]\n"
        'transport = "Streamable_HTTP"\nurl = "http://127.0.0.1:9000/mcp"\n'
        'tool_name_prefix = "hh."\nprotocol = "handshake"\nrequest_timeout_s = 5\n'
        'restart = "transient"\nmax_concurrent_calls = 2\n'
        'headers = { authorization = "new" }\nenvironment = { B = "2", C = "3" }\n'
    )
    app = project.app("h")
    assert app.state is AppState.VALIDATED, messages(app)
    definition = app.definition
    assert definition is not None
    assert definition.transport == "http"
    assert definition.manifest.transport == "http"
    assert definition.manifest.url == "http://127.0.0.1:9000/mcp"
    assert definition.manifest.tool_name_prefix == "hh."
    assert definition.manifest.request_timeout_seconds == 5
    assert definition.manifest.headers == {"X-Keep": "1", "authorization": "new"}
    assert definition.manifest.environment == {"A": "1", "B": "2", "C": "3"}
    assert definition.protocol == "handshake"
    assert definition.supervision.restart == "transient"
    assert definition.supervision.max_concurrent_calls == 2
    assert definition.supervision.intensity == 5  # from [supervision]


def test_a_bad_override_names_the_entry_that_set_it(project: Project) -> None:
    project.manifest("mcpapps/a", {"id": "a", "transport": "http", "url": "http://h/mcp"})
    project.config('[apps.entries.a]\nurl = "h/mcp"\n')
    assert messages(project.app("a")) == [
        "'url' \"h/mcp\" must be an absolute http:// or https:// URL, such as"
        " http://127.0.0.1:8000/mcp (set by apps.entries.a.url in config.toml)"
    ]


def test_the_protocol_and_policy_come_from_apps_and_supervision_by_default(
    project: Project,
) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config('[apps]\nprotocol = "stateless"\n[supervision]\nping_misses = 7\n')
    definition = project.app("a").definition
    assert definition is not None
    assert definition.protocol == "stateless"
    assert definition.supervision.ping_misses == 7


def test_entries_for_unknown_ids_are_a_warning(project: Project) -> None:
    project.manifest("mcpapps/grocery", stdio("grocery"))
    project.config("[apps.entries.grocey]\nenabled = false\n[apps.entries.other]\n")
    discovery = project.discover()
    assert discovery.apps[0].state is AppState.VALIDATED
    assert [w.message for w in discovery.warnings] == [
        "apps.entries.grocey names no discovered app (did you mean 'grocery'?)",
        "apps.entries.other names no discovered app",
    ]


# -- manifests' own paths and values ----------------------------------------------------------


def test_relative_working_directory_resolves_against_the_manifest_folder(
    project: Project,
) -> None:
    project.manifest("mcpapps/a", stdio("a", workingDirectory="server"))
    project.manifest("mcpapps/b", stdio("b"))
    project.manifest("mcpapps/c", stdio("c", workingDirectory="/opt/c"))
    found = {a.id: a.definition.manifest.working_directory for a in project.discover().apps}
    assert found == {
        "a": str(project.root / "mcpapps/a/server"),
        "b": str(project.root / "mcpapps/b"),
        "c": "/opt/c",
    }


def test_env_references_are_checked_against_the_environment(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a", environment={"KEY": "${env:APP_KEY}"}))
    assert project.app("a", {"APP_KEY": "k"}).state is AppState.VALIDATED
    app = project.app("a", {})
    assert messages(app) == [
        "'environment' \"KEY\" refers to ${env:APP_KEY}, but APP_KEY is not set in the"
        " environment mcpapps runs in: set it there, or remove the reference"
    ]
    # The definition keeps the reference, so secrets never show up in listings.
    definition = project.app("a", {"APP_KEY": "k"}).definition
    assert definition is not None
    assert definition.manifest.environment == {"KEY": "${env:APP_KEY}"}


def test_comments_and_trailing_commas_in_a_real_file(project: Project) -> None:
    project.manifest(
        "mcpapps/a", '// note\n{\n  "id": "a", /* why */\n  "command": "c",\n  "arguments": [],\n}'
    )
    assert project.app("a").state is AppState.VALIDATED


def test_a_misspelt_key_is_a_warning_naming_the_field(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a", toolNamePrefx="a."))
    app = project.app("a")
    assert app.state is AppState.VALIDATED
    assert [w.message for w in app.warnings] == [
        "toolNamePrefx is not a manifest field and is ignored (did you mean 'toolNamePrefix'?)"
    ]


def test_type_problems_name_the_json_key(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a", hasUi="yes", arguments=["ok", 5]))
    assert messages(project.app("a")) == [
        "arguments[1] must be a string, got 5",
        'hasUi must be true or false, got "yes"',
    ]


# -- inline apps ------------------------------------------------------------------------------


def test_inline_apps_come_after_the_manifests(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config(
        "[apps.inline.weather]\n"
        'transport = "http"\nurl = "http://127.0.0.1:8000/mcp"\ntool_name_prefix = "weather."\n'
        "[apps.inline.local]\n"
        'command = "node"\narguments = ["server.js"]\nworking_directory = "tools/local"\n'
    )
    apps = project.discover().apps
    assert [(a.id, a.state.value, a.inline) for a in apps] == [
        ("a", "Validated", False),
        ("weather", "Validated", True),
        ("local", "Validated", True),
    ]
    local = apps[2].definition
    assert local is not None
    assert apps[2].source == project.config_path
    assert local.manifest.working_directory == str(project.root / "tools/local")


def test_an_invalid_inline_app_names_its_config_keys_and_spares_the_others(
    project: Project,
) -> None:
    project.config(
        '[apps.inline.bad]\ncomand = "x"\nstartup_timeout_seconds = 0\nid = "other"\n'
        '[apps.inline.good]\ncommand = "x"\n'
    )
    bad, good = project.discover().apps
    assert messages(bad) == [
        "apps.inline.bad.startup_timeout_seconds must be an integer from 1 to 600, got 0",
        "apps.inline.bad.comand is not a known key (did you mean 'command'?)",
        "apps.inline.bad.id is not needed: the table name 'bad' is the app's id",
        "transport is 'stdio' but no 'apps.inline.bad.command' is given",
    ]
    assert good.state is AppState.VALIDATED


def test_an_unknown_transport_in_the_config_is_an_error_not_stdio(project: Project) -> None:
    """An entry or an inline app naming a transport mcpapps does not have is refused with the
    ones it has; it is not run as a stdio app (both have a command it could run)."""
    project.manifest("mcpapps/a", stdio("a"))
    project.config(
        '[apps.entries.a]\ntransport = "websocket"\n'
        '[apps.inline.b]\ntransport = "pigeon"\ncommand = "x"\n'
    )
    a, b = project.discover().apps
    allowed = "use 'stdio', 'http', 'sse' ('streamable-http' is read as 'http')"
    assert (a.state, a.definition, messages(a)) == (
        AppState.DISCOVERED,
        None,
        [
            f"'transport' \"websocket\" is not supported: {allowed} (set by"
            " apps.entries.a.transport in config.toml)"
        ],
    )
    assert (b.state, b.definition, messages(b)) == (
        AppState.DISCOVERED,
        None,
        [f"'apps.inline.b.transport' \"pigeon\" is not supported: {allowed}"],
    )


def test_an_inline_app_with_the_id_of_a_manifest_is_a_duplicate(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config('[apps.inline.a]\ncommand = "x"\n')
    first, second = project.discover().apps
    assert first.state is AppState.VALIDATED
    assert messages(second) == [f"duplicate id 'a', already defined by mcpapps/a/{MANIFEST}"]


def test_a_field_of_the_wrong_type_gives_one_problem_not_two(project: Project) -> None:
    project.manifest("mcpapps/a", {"id": 5, "command": "c"})
    project.manifest("mcpapps/b", {"id": "b", "transport": 5})
    project.manifest("mcpapps/c", {"id": "c", "transport": "http", "url": ["x"]})
    a, b, c = project.discover().apps
    assert messages(a) == ["id must be a string, got 5"]
    assert messages(b) == ["transport must be a string, got 5"]
    assert messages(c) == ['url must be a string, got ["x"]']


def test_a_home_folder_reference_is_refused_not_expanded(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a", workingDirectory="~nosuchuser/srv"))
    assert messages(project.app("a")) == [
        "'workingDirectory' \"~nosuchuser/srv\" starts with '~', which is not expanded: write"
        " an absolute path, or one relative to the manifest's folder"
    ]


def test_entry_ids_with_odd_characters_are_quoted(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config('[apps.entries."weird id!"]\n')
    [warning] = project.discover().warnings
    assert warning.message == 'apps.entries."weird id!" names no discovered app'


def test_a_byte_order_mark_is_accepted(project: Project) -> None:
    path = project.root / "mcpapps/a" / MANIFEST
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\xef\xbb\xbf{"id": "bom", "command": "c"}')
    assert project.app("bom").state is AppState.VALIDATED


def test_allow_and_deny_patterns_that_match_nothing_are_a_warning(three_apps: Project) -> None:
    three_apps.config('[apps]\nallow = ["grocery-inventroy", "w*"]\ndeny = ["nothing-*"]\n')
    assert [w.message for w in three_apps.discover().warnings] == [
        "apps.allow pattern 'grocery-inventroy' matches no discovered app"
        " (did you mean 'grocery-inventory'?)",
        "apps.deny pattern 'nothing-*' matches no discovered app",
    ]


def test_finding_no_app_at_all_is_a_warning(project: Project) -> None:
    (project.root / "mcpapps").mkdir()
    assert [w.message for w in project.discover().warnings] == [
        "no app found: check apps.discovery_paths and apps.manifest_name"
    ]


def test_a_problem_an_entry_causes_names_the_entry(project: Project) -> None:
    project.manifest(
        "mcpapps/a", stdio("a", headers={"X-Manifest": "${env:UNSET_ONE}"}, environment={})
    )
    project.config(
        '[apps.entries.a]\ntransport = "http"\nheaders = { "x-from-config" = "${env:UNSET_TWO}" }\n'
    )
    assert messages(project.app("a")) == [
        "transport is 'http' but no 'url' is given (set by apps.entries.a.transport in"
        " config.toml)",
        "'headers' \"X-Manifest\" refers to ${env:UNSET_ONE}, but UNSET_ONE is not set in the"
        " environment mcpapps runs in: set it there, or remove the reference",
        "'headers' \"x-from-config\" refers to ${env:UNSET_TWO}, but UNSET_TWO is not set in"
        " the environment mcpapps runs in: set it there, or remove the reference (set by"
        " apps.entries.a.headers in config.toml)",
    ]


def test_entries_apply_to_inline_apps(project: Project) -> None:
    project.config(
        '[apps.inline.tool]\ncommand = "node"\nrestart = "temporary"\nprotocol = "handshake"\n'
        '[apps.entries.tool]\nrestart = "temporary"\nprotocol = "handshake"\n'
        'arguments = ["server.js"]\n'
    )
    app = project.app("tool")
    assert messages(app) == [
        "apps.inline.tool.restart is not a manifest field: set it in [apps.entries.tool]",
        "apps.inline.tool.protocol is not a manifest field: set it in [apps.entries.tool]",
    ]
    project.config(
        '[apps.inline.tool]\ncommand = "node"\n'
        '[apps.entries.tool]\nrestart = "temporary"\nprotocol = "handshake"\n'
        'arguments = ["server.js"]\n'
    )
    definition = project.app("tool").definition
    assert definition is not None
    assert definition.supervision.restart == "temporary"
    assert definition.protocol == "handshake"
    assert definition.manifest.arguments == ("server.js",)


def test_env_references_where_they_are_not_expanded_are_a_warning(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a", arguments=["--key", "${env:KEY}"]))
    app = project.app("a")
    assert app.state is AppState.VALIDATED
    assert [w.message for w in app.warnings] == [
        "'arguments' contains ${env:...}, which is expanded only in header and environment"
        " values; here it stays as written"
    ]
