"""config.toml loading: defaults, paths, strictness, environment overrides, rules."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from supervisor.model.config import (
    AppEntry,
    Config,
    ConfigError,
    config_from_data,
    config_path,
    effective_policy,
    load_config,
)
from supervisor.model.policy import SupervisionPolicy
from supervisor.model.reload import needs_restart
from supervisor.model.tokens import TokenError, resolve_token
from supervisor.model.workspace import WorkspaceConfig
from tests.support.helpers import Project


def problems_of(project: Project, text: str, environ: dict[str, str] | None = None) -> list[str]:
    project.config(text)
    with pytest.raises(ConfigError) as caught:
        project.load(environ)
    return [str(problem) for problem in caught.value.problems]


def test_an_empty_file_gives_every_default_of_the_spec(project: Project) -> None:
    config = project.load()
    root = project.root

    assert config.path == project.config_path
    assert (config.server.host, config.server.port) == ("127.0.0.1", 18789)
    assert config.server.always_require_auth is False
    assert (config.server.token, config.server.token_file) == (None, None)
    assert (config.server.public_hosts, config.server.allowed_origins) == ((), ())
    assert config.sandbox.enabled is True
    assert config.sandbox.port == 18790
    assert config.sandbox.origin == "http://127.0.0.1:18790"
    assert config.apps.enabled is True
    assert config.apps.discovery_paths == (root / "mcpapps",)
    assert config.apps.manifest_name == "openclaw.mcpapp.json"
    assert config.apps.allowlist_semantics == "legacy"
    assert (config.apps.allow, config.apps.deny) == ((), ())
    assert config.apps.protocol == "auto"
    assert (config.apps.entries, config.apps.inline) == ({}, {})
    s = config.supervision
    assert (s.restart, s.backoff_initial_s, s.backoff_max_s) == ("permanent", 0.5, 30)
    assert (s.intensity, s.period_s, s.healthy_after_s) == (5, 60, 60)
    assert (s.ping_interval_s, s.ping_timeout_s, s.ping_misses) == (20, 5, 3)
    assert (s.stop_grace_s, s.max_concurrent_calls) == (5, 32)
    assert (config.agent.engine, config.agent.max_steps) == ("direct", 8)
    assert config.agent.history_turns == 50
    assert (config.agent.base_url, config.agent.model, config.agent.api_key_env) == (None,) * 3
    assert config.state.dir == root / ".mcpapps"
    assert (config.log.level, config.log.format) == ("info", "text")


def test_the_bundled_config_file_states_exactly_the_defaults(project: Project) -> None:
    defaults = project.load()
    project.config((Path(__file__).parent.parent / "config.toml").read_text())
    (project.root / "workspace").mkdir()
    bundled = project.load()
    # Except the workspace: off by default, `make run` opens the sample one.
    assert bundled.workspace == WorkspaceConfig(root=project.root / "workspace")
    assert attrs.evolve(bundled, workspace=None) == defaults


def test_relative_paths_resolve_against_the_config_folder_not_the_current_one(
    project: Project, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.config(
        '[apps]\ndiscovery_paths = ["apps", "../shared/apps", "/opt/apps"]\n'
        '[server]\ntoken_file = "secrets/token"\n[state]\ndir = "var"\n'
    )
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    config = project.load()
    root = project.root
    assert config.apps.discovery_paths == (
        root / "apps",
        root.parent / "shared" / "apps",
        Path("/opt/apps"),
    )
    assert config.server.token_file == root / "secrets" / "token"
    assert config.state.dir == root / "var"


def test_unknown_keys_are_errors_naming_the_file_the_key_and_a_likely_fix(
    project: Project,
) -> None:
    found = problems_of(project, "[server]\nprot = 1\n[severs]\n[apps.entries.x]\ncomand = 'y'\n")
    path = project.config_path
    assert found == [
        f"{path}: server.prot is not a known key (did you mean 'port'?)",
        f"{path}: apps.entries.x.comand is not a known key (did you mean 'command'?)",
        f"{path}: severs is not a known key (did you mean 'server'?)",
    ]


def test_wrong_types_are_reported_with_what_was_expected(project: Project) -> None:
    found = problems_of(
        project,
        '[server]\nport = "80"\nalways_require_auth = 1\n'
        '[apps]\ndiscovery_paths = "mcpapps"\nallow = [1]\n'
        "[supervision]\nintensity = true\nbackoff_initial_s = false\n",
    )
    path = project.config_path
    assert found == [
        f'{path}: server.port must be an integer from 1 to 65535, got "80"',
        f"{path}: server.always_require_auth must be true or false, got 1",
        f'{path}: apps.discovery_paths must be a list, got "mcpapps"',
        f"{path}: apps.allow[0] must be a string, got 1",
        f"{path}: supervision.backoff_initial_s must be a number greater than 0, got false",
        f"{path}: supervision.intensity must be an integer of at least 0, got true",
    ]


def test_agent_history_turns_must_be_at_least_one(project: Project) -> None:
    found = problems_of(project, "[agent]\nhistory_turns = 0\n")
    assert found == [
        f"{project.config_path}: agent.history_turns must be an integer of at least 1, got 0"
    ]


def test_a_nul_character_in_a_path_or_string_is_refused_naming_the_key(project: Project) -> None:
    """No path, command or value can hold a NUL: the OS refuses it far from the file (a reload
    answered 500, `validate` and `run` ended in a traceback)."""
    found = problems_of(
        project,
        '[apps]\ndiscovery_paths = ["/tmp/a\\u0000b"]\nallow = ["x\\u0000"]\n'
        '[server]\ntoken_file = "t\\u0000"\n[state]\ndir = "s\\u0000"\n',
    )
    path = project.config_path
    assert found == [
        f'{path}: server.token_file must be a path without a NUL character, got "t\\u0000"',
        f"{path}: apps.discovery_paths[0] must be a path without a NUL character,"
        ' got "/tmp/a\\u0000b"',
        f'{path}: apps.allow[0] must be a string without a NUL character, got "x\\u0000"',
        f'{path}: state.dir must be a path without a NUL character, got "s\\u0000"',
    ]
    # An app's command, arguments and folder: that app is refused, naming the key.
    project.config(
        '[apps]\ndiscovery_paths = []\n[apps.inline.x]\ntransport = "stdio"\n'
        'command = "py\\u0000"\narguments = ["a\\u0000"]\n'
    )
    [app] = project.discover().apps
    assert [str(e) for e in app.errors] == [
        f'{path}: apps.inline.x.command must be a string without a NUL character, got "py\\u0000"',
        f"{path}: apps.inline.x.arguments[0] must be a string without a NUL character,"
        ' got "a\\u0000"',
    ]


def test_out_of_range_values_name_the_key_path(project: Project) -> None:
    found = problems_of(
        project,
        "[server]\nport = 70000\n[supervision]\nping_misses = 0\nperiod_s = 0\n"
        "[apps.entries.weather]\nstartup_timeout_s = 0\nrequest_timeout_s = 3601\n"
        "[agent]\nmax_steps = 0\n",
    )
    path = project.config_path
    assert found == [
        f"{path}: server.port must be an integer from 1 to 65535, got 70000",
        f"{path}: apps.entries.weather.startup_timeout_s must be an integer from 1 to 600, got 0",
        f"{path}: apps.entries.weather.request_timeout_s must be an integer from 1 to 3600,"
        " got 3601",
        f"{path}: supervision.period_s must be a number greater than 0, got 0",
        f"{path}: supervision.ping_misses must be an integer of at least 1, got 0",
        f"{path}: agent.max_steps must be an integer of at least 1, got 0",
    ]


def test_chat_session_retention_is_checked_like_the_other_keys(project: Project) -> None:
    assert project.load().state.chat_sessions_max_age_days is None  # kept for ever
    assert project.load().state.chat_sessions_max_count is None
    project.config("[state]\nchat_sessions_max_age_days = 0.5\nchat_sessions_max_count = 10\n")
    state = project.load().state
    assert (state.chat_sessions_max_age_days, state.chat_sessions_max_count) == (0.5, 10)
    found = problems_of(
        project, '[state]\nchat_sessions_max_age_days = 0\nchat_sessions_max_count = "all"\n'
    )
    path = project.config_path
    assert found == [
        f"{path}: state.chat_sessions_max_age_days must be a number greater than 0, got 0",
        f'{path}: state.chat_sessions_max_count must be an integer of at least 1, got "all"',
    ]
    [problem] = problems_of(project, "[state]\nchat_sessions_max_count = 0\n")
    assert problem == (
        f"{path}: state.chat_sessions_max_count must be an integer of at least 1, got 0"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("apps.allowlist_semantics", '"lenient"'),
        ("apps.protocol", '"sse"'),
        ("supervision.restart", '"always"'),
        ("agent.engine", '"anthropic"'),
        ("log.level", '"verbose"'),
        ("log.format", '"xml"'),
    ],
)
def test_a_value_outside_its_choices_refuses_to_load(
    project: Project, key: str, value: str
) -> None:
    section, name = key.split(".")
    [problem] = problems_of(project, f"[{section}]\n{name} = {value}\n")
    assert problem.startswith(f"{project.config_path}: {key} must be one of '")
    assert problem.endswith(f", got {value}")


def test_invalid_toml_says_where(project: Project) -> None:
    [problem] = problems_of(project, "[server]\nport = = 1\n")
    assert problem.startswith(f"{project.config_path}: is not valid TOML: ")
    assert "line 2" in problem


def test_a_missing_config_file_says_how_to_point_at_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.toml", {})
    assert [str(p) for p in caught.value.problems] == [
        f"{tmp_path / 'nope.toml'}: config file not found; pass --config PATH, set"
        " MCPAPPS_CONFIG, or run where config.toml is"
    ]


def test_environment_overrides_replace_host_port_and_token(project: Project) -> None:
    project.config('[server]\nhost = "127.0.0.1"\nport = 1000\ntoken_file = "t"\n')
    config = project.load(
        {"MCPAPPS_HOST": "::1", "MCPAPPS_PORT": "2000", "MCPAPPS_TOKEN": "secret"}
    )
    assert (config.server.host, config.server.port) == ("::1", 2000)
    assert (config.server.token, config.server.token_file) == ("secret", None)
    assert config.sandbox.origin == "http://[::1]:2001"


def test_an_empty_environment_variable_counts_as_unset(project: Project) -> None:
    project.config("[server]\nport = 1000\n")
    assert project.load({"MCPAPPS_PORT": "", "MCPAPPS_HOST": ""}).server.port == 1000


def test_a_bad_environment_override_names_the_variable(project: Project) -> None:
    found = problems_of(project, "", {"MCPAPPS_PORT": "http"})
    assert found == [
        f'{project.config_path}: server.port must be an integer from 1 to 65535, got "http"'
        " (from MCPAPPS_PORT)"
    ]


def test_the_config_path_comes_from_the_flag_then_the_environment_then_the_default() -> None:
    assert config_path("a.toml", {"MCPAPPS_CONFIG": "b.toml"}) == Path("a.toml")
    assert config_path(None, {"MCPAPPS_CONFIG": "b.toml"}) == Path("b.toml")
    assert config_path(None, {}) == Path("config.toml")


def test_the_sandbox_must_not_share_the_control_ui_origin(project: Project) -> None:
    found = problems_of(project, '[sandbox]\norigin = "http://127.0.0.1:18789/"\n')
    assert found == [
        f"{project.config_path}: sandbox.origin 'http://127.0.0.1:18789/' is the control UI's own"
        " origin: serve app UIs from another origin (another port or host), or they could reach"
        " the control UI"
    ]
    assert problems_of(project, "[server]\nport = 9000\n[sandbox]\nport = 9000\n") == [
        f"{project.config_path}: sandbox.port must differ from server.port",
    ]


def test_the_derived_sandbox_port_must_be_a_port(project: Project) -> None:
    assert problems_of(project, "[server]\nport = 65535\n") == [
        f"{project.config_path}: server.port 65535 leaves no port for the sandbox"
        " (server.port + 1): set sandbox.port"
    ]
    assert problems_of(project, "", {"MCPAPPS_PORT": "65535"}) == [
        f"{project.config_path}: server.port 65535 leaves no port for the sandbox"
        " (server.port + 1): set sandbox.port (from MCPAPPS_PORT)"
    ]
    project.config("[server]\nport = 65535\n[sandbox]\nenabled = false\n")
    assert project.load().sandbox.enabled is False


def test_the_sandbox_origin_is_never_an_allowed_origin(project: Project) -> None:
    found = problems_of(project, '[server]\nallowed_origins = ["http://127.0.0.1:18790"]\n')
    assert found == [
        f"{project.config_path}: server.allowed_origins must not include the sandbox origin"
        " 'http://127.0.0.1:18790'"
    ]


def test_rules_that_span_keys(project: Project) -> None:
    found = problems_of(
        project,
        '[server]\ntoken = "a"\ntoken_file = "b"\nallowed_origins = ["https://x.example/app"]\n'
        '[agent]\nengine = "openai"\n'
        "[supervision]\nbackoff_initial_s = 2\nbackoff_max_s = 1\n"
        "[apps.entries.slow]\nbackoff_max_s = 0.1\n",
    )
    path = project.config_path
    assert found == [
        f"{path}: server.token and server.token_file are both set: keep one",
        f"{path}: server.allowed_origins[0] 'https://x.example/app' must be an origin such as"
        " https://app.example:8443 (no path)",
        f"{path}: supervision.backoff_max_s must be at least backoff_initial_s (2), got 1",
        f"{path}: apps.entries.slow.backoff_max_s must be at least backoff_initial_s (2), got 0.1",
        f"{path}: agent.base_url is required when agent.engine is 'openai'",
        f"{path}: agent.model is required when agent.engine is 'openai'",
    ]


def test_entry_defaults_and_the_effective_supervision_policy(project: Project) -> None:
    project.config(
        "[supervision]\nintensity = 9\n"
        '[apps.entries.a]\nrestart = "temporary"\nstop_grace_s = 1\n[apps.entries.b]\n'
    )
    config = project.load()
    assert config.apps.entries["b"] == AppEntry()
    assert config.apps.entries["b"].enabled is True
    policy = effective_policy(config.supervision, config.apps.entries["a"])
    assert policy == SupervisionPolicy(restart="temporary", stop_grace_s=1, intensity=9)
    assert effective_policy(config.supervision, None) == SupervisionPolicy(intensity=9)


@pytest.mark.parametrize("host", ["", "a b", "x:y", "[::1", "http://h", "h/"])
def test_the_server_host_must_be_an_address_or_a_name(project: Project, host: str) -> None:
    found = problems_of(project, f'[server]\nhost = "{host}"\n')
    assert found == [
        f"{project.config_path}: server.host '{host}' must be an IP address or a host name"
        " (IPv6 without brackets)"
    ]


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "::1", "0.0.0.0", "app.example."])
def test_good_server_hosts(project: Project, host: str) -> None:
    project.config(f'[server]\nhost = "{host}"\n')
    assert project.load().server.host == host


def test_a_bad_host_from_the_environment_names_the_variable(project: Project) -> None:
    assert problems_of(project, "", {"MCPAPPS_HOST": "x:y"}) == [
        f"{project.config_path}: server.host 'x:y' must be an IP address or a host name"
        " (IPv6 without brackets) (from MCPAPPS_HOST)"
    ]


@pytest.mark.parametrize("port", ["²", "1e3", "-1", "80 80"])
def test_odd_ports_from_the_environment(project: Project, port: str) -> None:
    [problem] = problems_of(project, "", {"MCPAPPS_PORT": port})
    assert problem.endswith(
        f"must be an integer from 1 to 65535, got {json.dumps(port, ensure_ascii=False)}"
        " (from MCPAPPS_PORT)"
    )


@pytest.mark.parametrize("origin", ["http://x:abc", "http://x:99999", "ftp://x", "http://[::1"])
def test_malformed_allowed_origins(project: Project, origin: str) -> None:
    found = problems_of(project, f'[server]\nallowed_origins = ["{origin}"]\n')
    assert found == [
        f"{project.config_path}: server.allowed_origins[0] '{origin}' must be an origin such as"
        " https://app.example:8443 (no path)"
    ]


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_seconds_must_be_finite(project: Project, value: str) -> None:
    [problem] = problems_of(project, f"[supervision]\nperiod_s = {value}\n")
    assert problem.startswith(f"{project.config_path}: supervision.period_s must be a number")


def test_a_key_the_file_cannot_set_is_unknown_without_a_self_suggestion(project: Project) -> None:
    assert problems_of(project, 'path = "elsewhere.toml"\n') == [
        f"{project.config_path}: path is not a known key"
    ]


@pytest.mark.parametrize(
    "text",
    ["apps = 5\n", "[apps]\nentries = []\n", "[apps.inline]\nx = 1\n", "[apps]\nentries = 'x'\n"],
)
def test_sections_of_the_wrong_shape(project: Project, text: str) -> None:
    [problem] = problems_of(project, text)
    assert problem.startswith(f"{project.config_path}: apps")
    assert "must be a table" in problem


def outcome(read: Callable[[], Config]) -> Config | ConfigError:
    try:
        return read()
    except ConfigError as error:
        return error


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_a_config_or_a_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_text(text, errors="surrogateescape")
        result = outcome(lambda: load_config(path, {}))
    if isinstance(result, ConfigError):
        assert result.problems
        assert all(p.source == path and p.message for p in result.problems)


TOML_VALUES = st.recursive(
    st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
SECTIONS = st.sampled_from(["server", "sandbox", "apps", "supervision", "agent", "state", "log"])
KEYS = st.sampled_from(
    [
        "host",
        "port",
        "token",
        "origin",
        "enabled",
        "allow",
        "entries",
        "inline",
        "restart",
        "discovery_paths",
        "dir",
        "level",
        "engine",
        "allowed_origins",
        "public_hosts",
        "x",
    ]
)


@settings(max_examples=500, deadline=None)
@given(
    st.dictionaries(SECTIONS, st.dictionaries(KEYS, TOML_VALUES, max_size=4) | TOML_VALUES),
    st.dictionaries(st.sampled_from(["MCPAPPS_HOST", "MCPAPPS_PORT", "MCPAPPS_TOKEN"]), st.text()),
)
@example({}, {"MCPAPPS_PORT": "0\x1f"})  # a space `strip` drops and `int` does not take
def test_any_shape_of_data_gives_a_config_or_a_config_error(
    data: dict[str, Any], environ: dict[str, str]
) -> None:
    path = Path("/etc/mcpapps/config.toml")
    result = outcome(lambda: config_from_data(data, path, environ))
    if isinstance(result, ConfigError):
        assert result.problems
        assert all(p.source == path and p.message for p in result.problems)


def test_home_folder_paths_are_refused_not_expanded(project: Project) -> None:
    assert problems_of(project, '[apps]\ndiscovery_paths = ["~/apps"]\n') == [
        f"{project.config_path}: apps.discovery_paths[0] must be an absolute path or one"
        " relative to the config file ('~' is not expanded), got \"~/apps\""
    ]


def test_public_hosts_are_host_header_values(project: Project) -> None:
    project.config('[server]\npublic_hosts = ["app.example", "app.example:8443", "[::1]:80"]\n')
    assert project.load().server.public_hosts == ("app.example", "app.example:8443", "[::1]:80")
    assert problems_of(project, '[server]\npublic_hosts = ["https://app.example"]\n') == [
        f"{project.config_path}: server.public_hosts[0] 'https://app.example' must be a Host"
        " header value such as app.example or app.example:8443"
    ]


def test_entries_have_every_supervision_key_with_the_same_type() -> None:
    import typing

    import attrs

    policy = typing.get_type_hints(SupervisionPolicy, include_extras=True)
    entry = typing.get_type_hints(AppEntry, include_extras=True)
    for field in attrs.fields(SupervisionPolicy):
        assert entry[field.name] == policy[field.name] | None, field.name


def test_view_settings_and_an_apps_approval_policy(project: Project) -> None:
    text = '[apps.entries.x]\napproval = "sometimes"\n[views]\nmax_in_flight = 0\n'
    assert problems_of(project, text) == [
        f"{project.config_path}: apps.entries.x.approval must be one of 'never', 'writes',"
        " 'always', got \"sometimes\"",
        f"{project.config_path}: views.max_in_flight must be an integer of at least 1, got 0",
    ]
    project.config('[apps.entries.x]\napproval = "always"\n[views]\nwindow_s = 5\n')
    config = project.load()
    assert config.apps.entries["x"].approval == "always"
    assert config.views.window_s == 5.0


def test_an_apps_ui_size_limit_and_csp_allowances(project: Project) -> None:
    text = (
        '[apps.entries.x]\nmax_ui_bytes = 100\ncsp_allow = ["unsafe-eval", "connect-all"]\n'
        "[apps.entries.y]\nmax_ui_bytes = 100000000\n"
    )
    assert problems_of(project, text) == [
        f"{project.config_path}: apps.entries.x.max_ui_bytes must be an integer from 65536"
        " to 67108864, got 100",
        f"{project.config_path}: apps.entries.x.csp_allow[1] must be one of 'unsafe-eval',"
        " 'blob-scripts', 'data-scripts', 'blob-workers', 'data-workers', got \"connect-all\"",
        f"{project.config_path}: apps.entries.y.max_ui_bytes must be an integer from 65536"
        " to 67108864, got 100000000",
    ]
    project.config('[apps.entries.x]\nmax_ui_bytes = 5242880\ncsp_allow = ["blob-workers"]\n')
    apps = project.load().apps
    assert apps.ui_settings("x") == {"maxUiBytes": 5242880, "cspAllow": ["blob-workers"]}
    assert apps.ui_settings("other") == {"maxUiBytes": 2 * 1024 * 1024, "cspAllow": []}
    assert apps.csp_allow("x") == frozenset({"blob-workers"})


def test_a_token_file_that_is_not_utf8_is_a_token_error(project: Project) -> None:
    (project.root / "token").write_bytes(b"\xff\xfe")
    project.config('[server]\ntoken_file = "token"\n')
    with pytest.raises(TokenError) as caught:
        resolve_token(project.load(), require_auth=True)
    assert str(caught.value).endswith("token is not UTF-8 text")
    (project.root / "state").mkdir()
    (project.root / "state" / "token").write_bytes(b"\xff\xfe")  # the generated one
    project.config('[state]\ndir = "state"\n')
    with pytest.raises(TokenError) as caught:
        resolve_token(project.load(), require_auth=True)
    assert "is not UTF-8 text: delete it to have a new one made" in str(caught.value)


def test_the_workspace_is_off_unless_set_and_checked_when_set(project: Project) -> None:
    assert project.load().workspace is None
    (project.root / "files").mkdir()
    project.config('[workspace]\nroot = "files"\nwritable = false\n')
    workspace = project.load().workspace
    assert workspace == WorkspaceConfig(root=project.root / "files", writable=False)
    assert (workspace.max_read_bytes, workspace.max_write_bytes) == (8 * 1024**2, 2 * 1024**2)
    # The workspace actor starts with the process: a reload says a change needs a restart.
    assert needs_restart(attrs.evolve(project.load(), workspace=None), project.load()) == (
        "workspace",
    )
    changed = attrs.evolve(project.load(), workspace=attrs.evolve(workspace, writable=True))
    assert needs_restart(project.load(), changed) == ("workspace.writable",)
    (project.root / "a-file").write_text("")
    for text, problem in [
        ("[workspace]\n", "workspace.root is required"),
        ('[workspace]\nroot = "missing"\n', f"'{project.root / 'missing'}' does not exist"),
        ('[workspace]\nroot = "a-file"\n', "is not a folder"),
        ('[workspace]\nroot = "files"\nmax_read_bytes = 0\n', "must be an integer from 1"),
        ('[workspace]\nroot = "files"\nroots = "x"\n', "did you mean 'root'?"),
        (
            '[workspace]\nroot = "files"\nmax_write_bytes = 5000000\n',
            "must not exceed limits.max_body_bytes (4194304)",
        ),
    ]:
        project.config(text)
        with pytest.raises(ConfigError, match=re.escape(problem)):
            project.load()
