"""`config.toml`: the model, its defaults, and loading with errors that name the key.

`load_config` reads the file, applies the `MCPAPPS_*` environment overrides, structures it with
the strict converter (every unknown key, wrong type and out-of-range value reported at once),
resolves relative paths against the config file's folder, derives the sandbox defaults and checks
the rules that span several keys. Anything wrong raises one `ConfigError` listing every problem.
"""

from __future__ import annotations

import ipaddress
import os.path
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import SplitResult, urlsplit

import attrs
from cattrs.errors import ClassValidationError
from cattrs.gen import make_dict_structure_fn, override

from supervisor.model.era import EraSetting
from supervisor.model.errors import McpappsError
from supervisor.model.limits import LimitsConfig
from supervisor.model.manifest import RequestTimeout, StartupTimeout
from supervisor.model.policy import (
    SUPERVISION_KEYS,
    Count,
    NonNegativeCount,
    NonNegativeSeconds,
    RestartType,
    Seconds,
    SupervisionPolicy,
    policy_problems,
)
from supervisor.model.problems import Problem
from supervisor.model.structuring import Between, KeyPath, dotted, make_converter, problems
from supervisor.model.viewsconfig import Approval, ViewsConfig
from supervisor.model.workspace import WorkspaceConfig

Port = Annotated[int, Between(1, 65535)]
# The size of an app's UI resource the control page renders: 2 MiB unless the operator allows
# one app more (or less), within bounds that keep a page's memory sane.
DEFAULT_MAX_UI_BYTES = 2 * 1024 * 1024
MaxUiBytes = Annotated[int, Between(64 * 1024, 64 * 1024 * 1024)]
# What an operator may add to one app's sandbox CSP (`csp_allow`); network origins are not
# among them: a view reaches only the origins its resource declares.
CspAllowance = Literal[
    "unsafe-eval", "blob-scripts", "data-scripts", "blob-workers", "data-workers"
]
CONFIG_ENV = "MCPAPPS_CONFIG"
DEFAULT_CONFIG = "config.toml"
# Environment variable -> the config key it replaces.
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "MCPAPPS_HOST": ("server", "host"),
    "MCPAPPS_PORT": ("server", "port"),
    "MCPAPPS_TOKEN": ("server", "token"),
}


@attrs.frozen(kw_only=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: Port = 18789
    always_require_auth: bool = False
    token: str | None = None
    token_file: Path | None = None
    public_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    # Where browsers reach the server behind a reverse proxy, path prefix included; the URLs
    # handed out are built from it (after loading: no trailing slash).
    public_url: str | None = None


@attrs.frozen(kw_only=True)
class SandboxConfig:
    """After loading, `port` and `origin` are always set (derived from the server when absent)."""

    enabled: bool = True
    port: Port | None = None
    origin: str | None = None
    public_origin: str | None = None  # where browsers reach the sandbox behind a proxy
    # A sandbox origin per app (web/apporigins.py): its views keep their origin, apart from
    # every other app's; off by default (off loopback it needs a wildcard DNS name).
    app_origins: bool = False


@attrs.frozen(kw_only=True)
class AppEntry:
    """`[apps.entries.<id>]`: per-app overrides; None means "as the manifest/defaults say"."""

    enabled: bool = True
    transport: str | None = None
    command: str | None = None
    arguments: tuple[str, ...] | None = None
    url: str | None = None
    headers: dict[str, str] = attrs.Factory(dict)
    environment: dict[str, str] = attrs.Factory(dict)
    tool_name_prefix: str | None = None
    auth: str | None = None  # "oauth": a person signs in (see Manifest.auth)
    scopes: tuple[str, ...] | None = None
    client_id: str | None = None
    client_secret: str | None = None
    protocol: EraSetting | None = None
    # May the app's sampling requests spend the chat agent's model? Off unless the person says.
    sampling: bool = False
    startup_timeout_s: StartupTimeout | None = None
    request_timeout_s: RequestTimeout | None = None
    # Any [supervision] key, for this app only.
    restart: RestartType | None = None
    backoff_initial_s: Seconds | None = None
    backoff_max_s: Seconds | None = None
    intensity: NonNegativeCount | None = None
    period_s: Seconds | None = None
    healthy_after_s: NonNegativeSeconds | None = None
    ping_interval_s: Seconds | None = None
    ping_timeout_s: Seconds | None = None
    ping_misses: Count | None = None
    stop_grace_s: NonNegativeSeconds | None = None
    max_concurrent_calls: Count | None = None
    approval: Approval | None = None  # a view's tool calls that need the person's approval
    max_ui_bytes: MaxUiBytes | None = None  # None: DEFAULT_MAX_UI_BYTES
    csp_allow: tuple[CspAllowance, ...] = ()


@attrs.frozen(kw_only=True)
class AppsConfig:
    enabled: bool = True
    discovery_paths: tuple[Path, ...] = (Path("mcpapps"),)
    manifest_name: str = "openclaw.mcpapp.json"
    allowlist_semantics: Literal["legacy", "strict"] = "legacy"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    protocol: EraSetting = "auto"
    watch: bool = False  # reload when a file under discovery_paths or config.toml changes
    # App processes started at once (each from its spawn until it is Running or has failed);
    # None: twice the cores this process may run on (actors/apps/startslots.py).
    max_starting: Count | None = None
    entries: dict[str, AppEntry] = attrs.Factory(dict)
    # `[apps.inline.<id>]`: manifests written in config.toml (snake_case keys). They are checked
    # app by app during discovery, so that one bad inline app does not stop the others.
    inline: dict[str, dict[str, Any]] = attrs.Factory(dict)

    def approvals(self) -> dict[str, Approval]:
        """The apps whose views' tool calls follow an approval policy other than the default."""
        return {app: e.approval for app, e in self.entries.items() if e.approval is not None}

    def ui_settings(self, app_id: str) -> dict[str, Any]:
        """What the control page needs to render the app's views (its `[apps.entries]`)."""
        entry = self.entries.get(app_id)
        limit = entry.max_ui_bytes if entry and entry.max_ui_bytes else DEFAULT_MAX_UI_BYTES
        return {"maxUiBytes": limit, "cspAllow": list(entry.csp_allow) if entry else []}

    def csp_allow(self, app_id: str) -> frozenset[str]:
        entry = self.entries.get(app_id)
        return frozenset(entry.csp_allow) if entry else frozenset()


@attrs.frozen(kw_only=True)
class AgentConfig:
    engine: Literal["direct", "openai"] = "direct"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    max_steps: Count = 8
    # The turns a chat session keeps in memory and gives its engine (the model sees no more):
    # older turns stay saved, and shown in the chat's history, but are not sent.
    history_turns: Count = 50


Days = Annotated[float, Between(0, low_exclusive=True)]


@attrs.frozen(kw_only=True)
class StateConfig:
    dir: Path = Path(".mcpapps")
    # Chat session retention: a session whose last turn is older, or that is beyond the newest
    # this many, is deleted (at start, then every 10 minutes). Unset: kept until deleted.
    chat_sessions_max_age_days: Days | None = None
    chat_sessions_max_count: Count | None = None
    # Where chat sessions are kept: absent, SQLite in `dir`; "postgresql://…" (`${env:NAME}`
    # allowed), a PostgreSQL database several supervisors share.
    database: str | None = None
    # How long a turn waits while another supervisor runs one of the same session.
    turn_wait_s: Seconds = 120.0
    # How long the start waits for its first connection to `database` before it gives up.
    connect_wait_s: Seconds = 30.0


@attrs.frozen(kw_only=True)
class LogConfig:
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["text", "json"] = "text"


@attrs.frozen(kw_only=True)
class Config:
    """The whole configuration. `path` is the file it came from; all paths in it are absolute."""

    path: Path = Path(DEFAULT_CONFIG)
    server: ServerConfig = attrs.Factory(ServerConfig)
    sandbox: SandboxConfig = attrs.Factory(SandboxConfig)
    apps: AppsConfig = attrs.Factory(AppsConfig)
    supervision: SupervisionPolicy = attrs.Factory(SupervisionPolicy)
    agent: AgentConfig = attrs.Factory(AgentConfig)
    state: StateConfig = attrs.Factory(StateConfig)
    log: LogConfig = attrs.Factory(LogConfig)
    limits: LimitsConfig = attrs.Factory(LimitsConfig)
    views: ViewsConfig = attrs.Factory(ViewsConfig)
    workspace: WorkspaceConfig | None = None  # absent: no workspace, no files

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def control_origin(self) -> str:
        """The origin the control UI is served from."""
        return f"http://{url_host(self.server.host)}:{self.server.port}"


class ConfigError(McpappsError):
    """config.toml cannot be used; `problems` holds one sentence per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = tuple(problems)


_converter = make_converter()
# `path` is where the config was read from, not a key of the file.
_structure_config = make_dict_structure_fn(Config, _converter, path=override(omit=True))


def config_path(given: str | None, environ: Mapping[str, str]) -> Path:
    """The config file to read: `--config`, else `$MCPAPPS_CONFIG`, else ./config.toml."""
    return Path(given or environ.get(CONFIG_ENV) or DEFAULT_CONFIG)


def load_config(path: Path, environ: Mapping[str, str]) -> Config:
    """Read, check and resolve a config file; raises ConfigError with every problem found."""
    path = Path(os.path.abspath(path))

    def unusable(why: str) -> ConfigError:
        return ConfigError([Problem(path, why)])

    try:
        raw = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise unusable(
            f"config file not found; pass --config PATH, set {CONFIG_ENV}, or run where"
            f" {DEFAULT_CONFIG} is"
        ) from None
    except OSError as error:
        raise unusable(f"cannot read the config file ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise unusable(f"is not UTF-8 text ({error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise unusable(f"is not valid TOML: {error}") from None
    return config_from_data(raw, path, environ)


def config_from_data(raw: dict[str, Any], path: Path, environ: Mapping[str, str]) -> Config:
    """The config that parsed TOML data `raw` (read from `path`) describes; raises ConfigError
    with every problem found."""
    path = Path(os.path.abspath(path))
    raw = dict(raw)  # the environment overrides are written into a copy
    from_env = _apply_environment(raw, environ)

    def say(key_path: KeyPath, message: str) -> Problem:
        origin = next((f" (from {var})" for var, key in from_env.items() if key_path == key), "")
        return Problem(path, f"{dotted(key_path)} {message}{origin}")

    try:
        loaded = _structure_config(raw, Config)
    except ClassValidationError as error:
        raise ConfigError(
            [say(key_path, message) for key_path, message in problems(error)]
        ) from None

    config = _resolve(attrs.evolve(loaded, path=path))
    found = [say(key_path, message) for key_path, message in _rules(config)]
    if found:
        raise ConfigError(found)
    return config


def _apply_environment(
    raw: dict[str, Any], environ: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """Write the MCPAPPS_* overrides into the raw TOML data; returns which keys they replaced."""
    applied: dict[str, tuple[str, str]] = {}
    for variable, (section, key) in ENV_OVERRIDES.items():
        value: Any = environ.get(variable, "")
        if not value:  # empty means unset, as in most tools
            continue
        table = raw.get(section, {})
        if not isinstance(table, dict):
            continue  # structuring reports the section itself
        raw[section] = table = dict(table)
        if key == "port" and re.fullmatch(r"[0-9]+", value.strip(), re.ASCII):
            value = int(value.strip())  # `int` takes fewer kinds of space than `strip` drops
        table[key] = value
        if key == "token":
            table.pop("token_file", None)  # a token given in the environment wins over a file
        applied[variable] = (section, key)
    return applied


def _resolve(config: Config) -> Config:
    """Relative paths against the config file's folder; the sandbox's derived port and origin."""

    def resolved(p: Path) -> Path:
        return Path(os.path.normpath(config.folder / p))

    server = config.server
    token_file = resolved(server.token_file) if server.token_file else None
    port = config.sandbox.port or server.port + 1
    # `public_origin` is `origin` under the name a proxy setup looks for (both: a rule error).
    origin = (
        config.sandbox.origin
        or config.sandbox.public_origin
        or f"http://{url_host(server.host)}:{port}"
    )
    public_url = server.public_url.rstrip("/") if server.public_url else None
    workspace = config.workspace
    if workspace is not None and workspace.root is not None:
        workspace = attrs.evolve(workspace, root=resolved(workspace.root))
    return attrs.evolve(
        config,
        server=attrs.evolve(server, token_file=token_file, public_url=public_url),
        sandbox=attrs.evolve(config.sandbox, port=port, origin=origin),
        apps=attrs.evolve(
            config.apps, discovery_paths=tuple(resolved(p) for p in config.apps.discovery_paths)
        ),
        state=attrs.evolve(config.state, dir=resolved(config.state.dir)),
        workspace=workspace,
    )


Found = Iterator[tuple[KeyPath, str]]
"""Rule problems as `(key path, the rest of the sentence)`."""


def _rules(config: Config) -> list[tuple[KeyPath, str]]:
    """The rules that span several keys."""
    return [
        *_server_rules(config.server),
        *_sandbox_rules(config),
        *_apps_rules(config),
        *_agent_rules(config.agent),
        *_state_rules(config.state),
        *_workspace_rules(config),
    ]


def _workspace_rules(config: Config) -> Found:
    workspace = config.workspace
    if workspace is None:
        return
    if workspace.root is None:
        yield ("workspace", "root"), "is required: the folder whose files may be opened"
    # Checked here, not first at start: `mcpapps validate` should say it, and a workspace that
    # is not there would otherwise only show as an empty Files pane.
    elif not workspace.root.is_dir():
        what = "does not exist" if not workspace.root.exists() else "is not a folder"
        yield (
            ("workspace", "root"),
            f"'{workspace.root}' {what}: create the folder, or remove [workspace] to have none",
        )
    if workspace.max_write_bytes > config.limits.max_body_bytes:
        # A save travels in one request body: a bigger one would be refused at the door (413)
        # before the host could answer `too-large`.
        yield (
            ("workspace", "max_write_bytes"),
            f"({workspace.max_write_bytes}) must not exceed limits.max_body_bytes"
            f" ({config.limits.max_body_bytes}): a save arrives in one request body",
        )


def _state_rules(state: StateConfig) -> Found:
    if state.database is not None and not state.database.startswith(
        ("postgresql://", "postgres://", "${env:")
    ):
        # Only the scheme: the rest may be `${env:…}` references, expanded at start.
        yield (
            ("state", "database"),
            "must be a PostgreSQL URL such as postgresql://mcpapps:${env:PGPASSWORD}@db/mcpapps"
            " (or absent: SQLite in state.dir)",
        )


def _server_rules(server: ServerConfig) -> Found:
    if not _is_host(server.host):
        yield (
            ("server", "host"),
            f"'{server.host}' must be an IP address or a host name (IPv6 without brackets)",
        )
    if server.token is not None and server.token_file is not None:
        yield ("server", "token"), "and server.token_file are both set: keep one"
    if server.token == "":
        yield ("server", "token"), "is empty: remove it or give a real token"
    for i, host in enumerate(server.public_hosts):
        if not _is_host_header(host):
            yield (
                ("server", "public_hosts", i),
                f"'{host}' must be a Host header value such as app.example or app.example:8443",
            )
    if server.public_url is not None and not _is_public_url(server.public_url):
        yield (
            ("server", "public_url"),
            f"'{server.public_url}' must be an absolute http(s) URL such as"
            " https://apps.example.com/mcpapps (a path prefix, no query or fragment)",
        )
    for i, origin in enumerate(server.allowed_origins):
        if not _is_origin(origin):
            yield (
                ("server", "allowed_origins", i),
                f"'{origin}' must be an origin such as https://app.example:8443 (no path)",
            )


def _sandbox_rules(config: Config) -> Found:
    server, sandbox = config.server, config.sandbox
    if not sandbox.enabled or not _is_host(server.host):
        return  # nothing to check, or the origins derived from the host would be nonsense
    assert sandbox.port is not None  # set by _resolve
    assert sandbox.origin is not None
    if sandbox.port > 65535:
        yield (
            ("server", "port"),
            f"{server.port} leaves no port for the sandbox (server.port + 1): set sandbox.port",
        )
        return
    if sandbox.port == server.port:
        yield ("sandbox", "port"), "must differ from server.port"
        return
    if sandbox.public_origin is not None and sandbox.origin != sandbox.public_origin:
        yield (
            ("sandbox", "public_origin"),
            "and sandbox.origin are both set: keep one (public_origin is the origin browsers"
            " reach the sandbox at, which is what origin means too)",
        )
        return
    key = ("sandbox", "public_origin" if sandbox.public_origin else "origin")
    public = server.public_url if server.public_url and _is_public_url(server.public_url) else None
    if not _is_origin(sandbox.origin):
        yield (
            key,
            f"'{sandbox.origin}' must be an origin such as http://127.0.0.1:18790 (no path)",
        )
    elif public is not None and _origin_key(sandbox.origin) == _origin_key(public):
        yield (
            key,
            f"'{sandbox.origin}' is the origin of server.public_url: serve app UIs from"
            " another origin (another host name), or they could reach the control UI",
        )
    elif _origin_key(sandbox.origin) == _origin_key(config.control_origin):
        yield (
            key,
            f"'{sandbox.origin}' is the control UI's own origin: serve app UIs from"
            " another origin (another port or host), or they could reach the control UI",
        )
    elif any(
        _is_origin(o) and _origin_key(o) == _origin_key(sandbox.origin)
        for o in server.allowed_origins
    ):
        yield (
            ("server", "allowed_origins"),
            f"must not include the sandbox origin '{sandbox.origin}'",
        )


def _apps_rules(config: Config) -> Found:
    name = config.apps.manifest_name
    if not name or "/" in name or name in (".", ".."):
        yield ("apps", "manifest_name"), f"'{name}' must be a plain file name"
    for key, why in policy_problems(config.supervision):
        yield ("supervision", key), why
    for app_id, entry in config.apps.entries.items():
        for key, why in policy_problems(effective_policy(config.supervision, entry)):
            yield ("apps", "entries", app_id, key), why


def _agent_rules(agent: AgentConfig) -> Found:
    if agent.engine == "openai":
        for key in ("base_url", "model"):
            if not getattr(agent, key):
                yield ("agent", key), "is required when agent.engine is 'openai'"


def effective_policy(defaults: SupervisionPolicy, entry: AppEntry | None) -> SupervisionPolicy:
    """`[supervision]` with the entry's own supervision keys on top."""
    if entry is None:
        return defaults
    changes = {k: getattr(entry, k) for k in SUPERVISION_KEYS if getattr(entry, k) is not None}
    return attrs.evolve(defaults, **changes)


def url_host(host: str) -> str:
    """A host as it appears in a URL: IPv6 addresses in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


_HOST_NAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?"
)


def _is_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(_HOST_NAME.fullmatch(host))
    return True


def _split(url: str) -> SplitResult | None:
    """`url` split, or None when it cannot be (a bad IPv6 literal, a port that is not a number)."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError:
        return None
    return parts


def _is_host_header(value: str) -> bool:
    parts = _split(f"//{value}")
    return (
        parts is not None
        and parts.hostname is not None
        and _is_host(parts.hostname)
        and not parts.path
    )


def _is_web_url(parts: SplitResult | None) -> bool:
    return (
        parts is not None
        and parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not parts.query
        and not parts.fragment
    )


def _is_origin(origin: str) -> bool:
    parts = _split(origin)
    return _is_web_url(parts) and parts is not None and parts.path in ("", "/")


def _is_public_url(url: str) -> bool:
    return _is_web_url(_split(url)) and "?" not in url and "#" not in url


def _origin_key(origin: str) -> tuple[str, str, int]:
    parts = urlsplit(origin)
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default
