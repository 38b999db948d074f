"""`mcpapps import`: the MCP servers of a Claude Desktop, Cursor or VS Code config turned into
our apps. Pure: parsed data in; the apps as TOML text or manifests, the variables to set and
every key that could not be mapped (with why) out.

The shapes read: `mcpServers` (Claude Desktop, Claude Code, Cursor and the tools that copied
them) and VS Code's `servers` with its `inputs` (`.vscode/mcp.json`, or under `mcp` in
settings.json). A server has `command`, `args`, `env`, `cwd`, or `url` and `headers`, and a
`type` (stdio, http, sse); without one, a command means stdio and a URL Streamable HTTP.

Secrets never reach the output. A value in `env` or `headers` is a secret when its name says
so (a token, a key, a password...), when it looks like one (a known token prefix, a long random
string, a URL with a password in it) or when it comes from a VS Code `${input:...}` prompt; it
is written as a `${env:NAME}` reference and NAME is listed among the variables to set. Values
that are references already (`${env:NAME}`, Claude Code's `${NAME}`) stay references. A secret
where mcpapps expands no reference (the command, an argument, the URL) leaves its server out,
with the reason: copying it would leak it, and a placeholder would not work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from supervisor.model.errors import McpappsError
from supervisor.model.manifest import (
    ID_RULE,
    camel,
    id_problem,
    manifest_problems,
    structure_manifest,
)
from supervisor.model.openclaw import Unmapped
from supervisor.model.structuring import dotted, show
from supervisor.model.tomltext import toml_key, toml_value
from supervisor.model.transports import DEFAULT, TRANSPORTS, TransportSpec, find_transport_loosely


class ServersImportError(McpappsError, ValueError):
    """The file holds no MCP servers to import; the message says what to do."""


@attrs.frozen
class Variable:
    """A variable the person must set before the imported apps validate: its name, and where
    the value came from (never the value)."""

    name: str
    origin: str  # mcpServers.github.env.GITHUB_TOKEN, or a VS Code input's description

    def __str__(self) -> str:
        return f"{self.name} (for {self.origin})"


@attrs.frozen
class ImportedApp:
    """One server as an app: its id, what it was called, and its manifest fields (snake_case,
    as `[apps.inline.<id>]` spells them)."""

    id: str
    server: str  # the server's name in the file
    where: str  # its key path in the file: mcpServers.github
    fields: dict[str, Any]
    needs: tuple[str, ...] = ()  # the variables its references name
    disabled: bool = False  # the source had it turned off: imported with enabled = false


@attrs.frozen
class Imported:
    apps: tuple[ImportedApp, ...]
    variables: tuple[Variable, ...]
    unmapped: tuple[Unmapped, ...]
    skipped: tuple[Unmapped, ...]  # whole servers left out (an id taken, a secret in args...)

    def toml(self, source: Path, *, taken_entries: Iterable[str] = ()) -> str:
        """The apps as `[apps.inline.<id>]` tables to append to a config.toml, after a comment
        that says where they came from, what to set and what was left out. A disabled server
        also gets `[apps.entries.<id>] enabled = false`, unless the config has that table."""
        lines = [f"# Imported from {source} by `mcpapps import`."]
        lines += self._comments()
        for app in self.apps:
            table = f"apps.inline.{toml_key(app.id)}"
            lines += ["", f"[{table}]"]
            maps = {k: v for k, v in app.fields.items() if isinstance(v, dict)}
            lines += [
                f"{key} = {toml_value(v)}" for key, v in app.fields.items() if key not in maps
            ]
            for key, mapping in maps.items():
                lines += [f"[{table}.{key}]"]
                lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in mapping.items()]
            if app.disabled and app.id not in set(taken_entries):
                lines += [f"[apps.entries.{toml_key(app.id)}]"]
                lines += ["enabled = false  # it was disabled where it came from"]
        return "\n".join(lines) + "\n"

    def manifests(self) -> dict[str, dict[str, Any]]:
        """The apps as manifests (camelCase JSON), by id."""
        return {
            app.id: {"id": app.id, **{camel(k): v for k, v in app.fields.items()}}
            for app in self.apps
        }

    def _comments(self) -> list[str]:
        lines = []
        if self.variables:
            lines.append("# Set these variables in the environment mcpapps runs in:")
            lines += [f"#   {variable}" for variable in self.variables]
        if self.unmapped or self.skipped:
            lines.append("# Not imported:")
            lines += [f"#   {problem}" for problem in (*self.skipped, *self.unmapped)]
        return lines


# ---- reading the file ---------------------------------------------------------------------------

# Keys with a known meaning that mcpapps does not map, and why.
_NOT_MAPPED = {
    "envFile": "mcpapps reads no env files: set its variables in the environment mcpapps runs"
    " in (a stdio app inherits that environment)",
    "autoApprove": "mcpapps has no list of tools approved in advance; a view's tool calls follow"
    " [apps.entries.<id>] approval",
    "alwaysAllow": "mcpapps has no list of tools approved in advance; a view's tool calls follow"
    " [apps.entries.<id>] approval",
    "timeout": "set request_timeout_seconds (seconds) in the app's table by hand if needed",
    "dev": "VS Code's development mode (watch and debug) has no mcpapps equivalent",
    "sandbox": "VS Code's sandbox settings have no mcpapps equivalent",
    "sandboxEnabled": "VS Code's sandbox settings have no mcpapps equivalent",
}
_ALIASES = {"serverUrl": "url", "transportType": "type"}  # Windsurf, Cline

_REFERENCE = re.compile(r"\$\{(env|input):([^}]*)\}|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")
_VSCODE_VARIABLE = re.compile(r"\$\{(workspaceFolder|userHome)\}")
_SECRET_NAME = re.compile(
    r"(?i)key|token|secret|passw|pwd|credential|auth|cookie|session|private|signature|dsn"
    r"|(?:^|[_-])pat(?:$|[_-])"
)
_SECRET_PREFIX = re.compile(
    r"(?:sk|rk|pk)[-_]|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|eyJ|npm_|hf_"
    r"|pypi-|Bearer\s|Basic\s|Token\s"
)
_RANDOM_LOOKING = re.compile(r"[A-Za-z0-9_\-+/=.]{24,}")
_URL_PASSWORD = re.compile(r"://[^/@:\s]+:[^/@\s]+@")


def looks_secret(name: str, value: str) -> bool:
    """Whether a value named `name` must not be copied: when in doubt it is a secret (one
    variable more to set costs less than a token written into a config file)."""
    if _SECRET_NAME.search(name) or _SECRET_PREFIX.match(value) or _URL_PASSWORD.search(value):
        return True
    return bool(
        _RANDOM_LOOKING.fullmatch(value)
        and re.search(r"[0-9]", value)
        and re.search(r"[A-Za-z]", value)
        and not value.startswith(("/", ".", "http:", "https:"))
    )


def variable_name(text: str) -> str:
    """An environment variable name made of `text`: `github-token` -> `GITHUB_TOKEN`."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper() or "SECRET"
    return f"_{name}" if name[0].isdigit() else name


def app_id_for(server: str) -> str:
    """An app id for a server name: the name itself when it is a valid id, else its runs of
    other characters as '-' (`My Server` -> `My-Server`)."""
    if id_problem(server) is None:
        return server
    return re.sub(r"[^A-Za-z0-9._-]+", "-", server).strip("-._")[:64].rstrip("-._")


def servers_of(data: Any, source: Path) -> tuple[str, dict[str, Any], list[Any], list[Unmapped]]:
    """Where the servers are: (the key path to them, the servers, the VS Code inputs, the
    other top-level keys as one Unmapped)."""
    if not isinstance(data, dict):
        raise ServersImportError(f"{source}: must hold one JSON object, not {show(data)}")
    where, root = "", data
    if "mcpServers" not in data and "servers" not in data and isinstance(data.get("mcp"), dict):
        where, root = "mcp.", data["mcp"]  # VS Code's settings.json
    for key in ("mcpServers", "servers"):
        if isinstance(root.get(key), dict):
            servers, name = root[key], f"{where}{key}"
            break
    else:
        raise ServersImportError(
            f"{source}: has no 'mcpServers' object (Claude Desktop, Cursor) nor 'servers'"
            " object (VS Code): is this an MCP client's config file?"
        )
    inputs: list[Any] = root["inputs"] if isinstance(root.get("inputs"), list) else []
    if where:
        others = [k for k in data if k != "mcp"]
        others += [f"mcp.{k}" for k in root if k not in ("servers", "inputs")]
    else:
        others = [k for k in data if k not in (name, "inputs")]
    unmapped = []
    if others:
        listed = ", ".join(f"'{k}'" for k in others)
        unmapped.append(Unmapped("(top level)", f"{listed}: not about MCP servers, not imported"))
    return name, servers, inputs, unmapped


def import_servers(
    data: Any,
    *,
    source: Path,
    taken: Iterable[str] = (),
    home: Path | None = None,
) -> Imported:
    """The servers of `data` (the parsed config read from `source`) as apps. `taken`: the ids
    the target config has already (each such server is left out and said: importing twice adds
    nothing). `home` stands for VS Code's `${userHome}`. Raises ServersImportError when there
    is no servers object."""
    name, servers, inputs, unmapped = servers_of(data, source)
    prompts = _inputs(inputs)
    workspace = source.parent.parent if source.parent.name == ".vscode" else source.parent
    places = {"workspaceFolder": str(workspace.absolute())}
    if home is not None:
        places["userHome"] = str(home)
    reader = _Reader(prompts, places, taken)
    apps: list[ImportedApp] = []
    for server, definition in servers.items():
        app = reader.read(f"{name}.{server}", server, definition)
        if app is not None:
            apps.append(app)
    return Imported(
        tuple(apps),
        tuple(reader.variables.values()),
        (*unmapped, *reader.unmapped),
        tuple(reader.skipped),
    )


def _inputs(inputs: list[Any]) -> dict[str, str]:
    """VS Code's inputs: id -> what it asks for (its description)."""
    found = {}
    for item in inputs:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            found[item["id"]] = str(item.get("description") or f"VS Code input '{item['id']}'")
    return found


class _Skip(Exception):
    """The server cannot be imported; the text says why."""


class _Reader:
    """Reads server after server, keeping the variables (a name is given to one secret only:
    another secret wanting it gets its app's id in front) and what was not mapped."""

    def __init__(
        self, prompts: Mapping[str, str], places: Mapping[str, str], taken: Iterable[str]
    ) -> None:
        self.prompts = prompts
        self.places = places
        self.taken = set(taken)
        self.ids: set[str] = set()  # given to servers of this file
        self.variables: dict[str, Variable] = {}
        self._sources: dict[str, str] = {}  # variable name -> what fills it (value or input)
        self.unmapped: list[Unmapped] = []
        self.skipped: list[Unmapped] = []
        self._needs: dict[str, None] = {}  # the current server's variables, in order

    def read(self, where: str, server: str, definition: Any) -> ImportedApp | None:
        app_id = app_id_for(server)
        if not isinstance(definition, dict):
            self.skipped.append(Unmapped(where, f"must be an object, got {show(definition)}"))
            return None
        if not app_id:
            why = f"its name gives no usable app id ({ID_RULE}): not imported"
            self.skipped.append(Unmapped(where, why))
            return None
        if app_id in self.ids:
            why = f"another server of this file is imported as '{app_id}': rename one of them"
            self.skipped.append(Unmapped(where, why))
            return None
        if app_id in self.taken:
            why = f"the config has an app '{app_id}' already: left as it is, not imported again"
            self.skipped.append(Unmapped(where, why))
            return None
        saved = (dict(self.variables), dict(self._sources), len(self.unmapped))
        self._needs = {}
        try:
            fields, disabled = self._fields(where, app_id, definition)
        except _Skip as skip:
            self.variables, self._sources = dict(saved[0]), dict(saved[1])
            del self.unmapped[saved[2] :]
            self.skipped.append(Unmapped(where, f"{skip}: not imported"))
            return None
        if app_id != server:
            fields = {"name": server, **fields}
        self.ids.add(app_id)
        return ImportedApp(app_id, server, where, fields, tuple(self._needs), disabled)

    def _fields(self, where: str, app_id: str, d: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        d = {_ALIASES.get(k, k): v for k, v in d.items()}
        spec = self._transport(d)
        kind = spec.name
        fields: dict[str, Any] = {} if kind == DEFAULT else {"transport": kind}
        disabled = False
        for key, value in d.items():
            at = f"{where}.{key}"
            match key:
                case "type":
                    pass
                case "command" | "cwd" | "url" if not isinstance(value, str):
                    raise _Skip(f"'{key}' must be a string, got {show(value)}")
                case "command" if spec.process:
                    fields["command"] = self._plain(at, value)
                case "cwd" if spec.process:
                    fields["working_directory"] = self._plain(at, value)
                case "url" if spec.remote:
                    query = re.findall(r"[?&]([^=&#]+)=([^&#]+)", value)
                    secret = any(_SECRET_NAME.search(name) for name, _ in query)
                    fields["url"] = self._plain(at, value, secret=secret)
                case "args" if spec.process:
                    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                        raise _Skip(f"'args' must be a list of strings, got {show(value)}")
                    fields["arguments"] = [
                        self._plain(f"{at}[{i}]", v, secret=_secret_argument(value, i))
                        for i, v in enumerate(value)
                    ]
                case "env" if spec.process:
                    fields["environment"] = self._map(at, app_id, value, header=False)
                case "headers" if spec.remote:
                    fields["headers"] = self._map(at, app_id, value, header=True)
                case "command" | "cwd" | "args" | "env" | "url" | "headers":
                    self.unmapped.append(Unmapped(at, f"has no use with transport '{kind}'"))
                case "disabled":
                    disabled = value is True
                case _ if key in _NOT_MAPPED:
                    self.unmapped.append(Unmapped(at, _NOT_MAPPED[key]))
                case _:
                    self.unmapped.append(Unmapped(at, "not a server setting mcpapps has"))
        if not fields.get("environment"):
            fields.pop("environment", None)
        if not fields.get("headers"):
            fields.pop("headers", None)
        return fields, disabled

    def _transport(self, d: dict[str, Any]) -> TransportSpec:
        """The server's transport: its `type`, else what the clients assume (a server with a
        command is run, one with a URL is Streamable HTTP). A type that is none of ours is
        not imported: read as stdio, it would run something else than the server."""
        given = d.get("type")
        if given is None:
            if "command" in d:
                return TRANSPORTS["stdio"]
            if "url" in d:
                return TRANSPORTS["http"]
            raise _Skip("it has neither a 'command' nor a 'url'")
        spec = find_transport_loosely(str(given))
        if spec is None:
            raise _Skip(f"its type {show(given)} is none of {', '.join(TRANSPORTS)}")
        return spec

    def _plain(self, at: str, value: str, *, secret: bool = False) -> str:
        """A value where mcpapps expands no reference (a command, an argument, a folder, a
        URL): VS Code's folders filled in, any other reference kept as written and said, a
        secret (`secret`: by what names it; else by its looks) refused."""
        value = _VSCODE_VARIABLE.sub(lambda m: self.places.get(m.group(1), m.group(0)), value)
        for match in _REFERENCE.finditer(value):
            if match.group(1) == "input":
                raise _Skip(
                    f"{at.rsplit('.', 1)[-1]} asks for {match.group(0)}, a value mcpapps can"
                    " pass only in env or headers (as ${env:NAME}); pass it there by hand"
                )
            self.unmapped.append(
                Unmapped(
                    at,
                    f"{match.group(0)} is not expanded here by mcpapps (only in env and"
                    " headers): written as is, replace it by hand",
                )
            )
        looks = secret or _SECRET_PREFIX.match(value) or _URL_PASSWORD.search(value)
        if looks and not _REFERENCE.fullmatch(value):
            raise _Skip(
                f"{at.rsplit('.', 1)[-1]} holds what looks like a secret, which mcpapps"
                " would have to copy (it expands ${env:NAME} only in env and headers)"
            )
        return value

    def _map(self, at: str, app_id: str, value: Any, *, header: bool) -> dict[str, str]:
        if not isinstance(value, dict):
            raise _Skip(f"'{at.rsplit('.', 1)[-1]}' must be an object, got {show(value)}")
        out = {}
        for key, raw in value.items():
            if isinstance(raw, bool | int | float):
                raw = str(raw).lower() if isinstance(raw, bool) else str(raw)
            if not isinstance(raw, str):
                self.unmapped.append(Unmapped(f"{at}.{key}", f"must be a string, got {show(raw)}"))
                continue
            out[key] = self._value(f"{at}.{key}", app_id, key, raw, header=header)
        return out

    def _value(self, at: str, app_id: str, key: str, raw: str, *, header: bool) -> str:
        """An env or header value: references kept (as ${env:NAME}), a secret made one."""
        value = _VSCODE_VARIABLE.sub(lambda m: self.places.get(m.group(1), m.group(0)), raw)

        def reference(match: re.Match[str]) -> str:
            kind, inner, bare, default = match.groups()
            if kind == "input":
                name = self._claim(variable_name(inner), f"input:{inner}", app_id)
                self._need(name, self.prompts.get(inner, f"VS Code input '{inner}'"))
            else:
                name = inner if kind == "env" else bare
                if default:
                    self.unmapped.append(
                        Unmapped(at, f"the default in {match.group(0)} is dropped: set {name}")
                    )
                self._need(name, at)
            return f"${{env:{name}}}"

        if _REFERENCE.search(value):
            return _REFERENCE.sub(reference, value)
        scheme = re.match(r"(?i)(Bearer|Basic|Token)\s+", value) if header else None
        secret = value[scheme.end() :] if scheme else value
        if not looks_secret(key, secret) and not scheme:
            return value
        base = variable_name(key if not header else f"{app_id}_{key}")
        name = self._claim(base, f"value:{secret}", app_id)
        self._need(name, at)
        return f"{scheme.group(0) if scheme else ''}${{env:{name}}}"

    def _claim(self, name: str, filled_by: str, app_id: str) -> str:
        """`name` for the secret `filled_by`, unless another secret has it: then the app's id
        goes in front (GITHUB_API_KEY beside API_KEY)."""
        if self._sources.setdefault(name, filled_by) == filled_by:
            return name
        prefixed = variable_name(f"{app_id}_{name}")
        self._sources.setdefault(prefixed, filled_by)
        return prefixed

    def _need(self, name: str, origin: str) -> None:
        self.variables.setdefault(name, Variable(name, origin))
        self._needs[name] = None


def problems_of(imported: Imported, environ: Mapping[str, str]) -> dict[str, list[str]]:
    """What mcpapps would refuse in each imported app, with `environ` (the variables to set are
    taken as set): app id -> sentences. Empty when every app validates."""
    environ = {**environ, **{v.name: "set" for v in imported.variables}}
    found: dict[str, list[str]] = {}
    for app in imported.apps:
        prefix = ("apps", "inline", app.id)

        def quote(field: str, prefix: tuple[str, ...] = prefix) -> str:
            return f"'{dotted((*prefix, field))}'"

        manifest, typed = structure_manifest(app.fields, inline=True)
        manifest = attrs.evolve(manifest, id=app.id)
        errors, _ = manifest_problems(manifest, environ, quote)
        sentences = [f"{dotted((*prefix, *path))} {why}" for path, why in typed]
        sentences += [why for _, why in errors]
        if sentences:
            found[app.id] = sentences
    return found


def without(imported: Imported, refused: Mapping[str, list[str]]) -> Imported:
    """`imported` without the apps mcpapps refuses (each said in `skipped`), and without the
    variables only they needed."""
    if not refused:
        return imported
    kept = tuple(app for app in imported.apps if app.id not in refused)
    needed = {name for app in kept for name in app.needs}
    skipped = [
        Unmapped(app.where, f"mcpapps refuses it: {'; '.join(refused[app.id])}")
        for app in imported.apps
        if app.id in refused
    ]
    return attrs.evolve(
        imported,
        apps=kept,
        variables=tuple(v for v in imported.variables if v.name in needed),
        skipped=(*imported.skipped, *skipped),
    )


def _secret_argument(args: list[str], i: int) -> bool:
    """Whether argument `i` is a secret by its name: `--api-key=X`, or X after `--api-key`."""
    flag, equals, rest = args[i].partition("=")
    if equals and flag.startswith("-") and rest:
        return bool(_SECRET_NAME.search(flag))
    before = args[i - 1] if i else ""
    return before.startswith("-") and "=" not in before and bool(_SECRET_NAME.search(before))
