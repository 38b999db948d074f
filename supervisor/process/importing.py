"""`mcpapps import FILE`: the servers of a Claude Desktop, Cursor or VS Code config added to
ours. The conversion is pure (supervisor/model/mcpservers.py); this module reads the files,
finds the ids the config has already, and writes: appended to config.toml (the default, the
person's own text and comments kept as they are), to another file, to stdout, or as one
manifest folder per server. Nothing is written that would not load: the text appended is
checked with the config it joins before the file is replaced.
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from supervisor.model import jsontext
from supervisor.model.config import Config, ConfigError, config_from_data, load_config
from supervisor.model.discovery import discover
from supervisor.model.errors import McpappsError
from supervisor.model.lifecycle import AppState
from supervisor.model.mcpservers import (
    Imported,
    ServersImportError,
    import_servers,
    problems_of,
    without,
)
from supervisor.model.problems import Problem


class ImportRefused(McpappsError):
    """Nothing can be written (a file in the way, a result that would not load); the text
    says why, and is printed as the command's error."""


def run_import(
    source: Path,
    *,
    config_file: Path,
    out: str | None,
    manifests: Path | None,
    environ: Mapping[str, str],
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """0 when the file was read (whatever was added, skipped or left out: all said), 1 when
    it could not be, or the config it would join does not load."""
    try:
        data = jsontext.parse(source.read_bytes().decode("utf-8-sig"))
        config = _config(config_file, environ)
        discovered = discover(config, environ).apps
        taken = {*config.apps.inline, *(app.id for app in discovered if app.id)}
        if manifests is not None and manifests.is_dir():
            taken |= {p.name for p in manifests.iterdir()}
        imported = import_servers(data, source=source, taken=taken, home=Path.home())
        imported = without(imported, problems_of(imported, environ))
        report = stderr if out == "-" else stdout
        if manifests is not None:
            _write_manifests(imported, manifests, config, report)
        elif out == "-":
            print(imported.toml(source, taken_entries=config.apps.entries), end="", file=stdout)
        elif out is not None:
            _write_new(Path(out), imported, source, config, environ, report)
        else:
            _append(config_file, imported, source, config, environ, report)
    except OSError as error:
        name = error.filename or source
        print(f"mcpapps: error: cannot use {name}: {error.strerror or error}", file=stderr)
        return 1
    except UnicodeDecodeError as error:
        print(f"mcpapps: error: {source} is not UTF-8 text ({error.reason})", file=stderr)
        return 1
    except jsontext.JSONTextError as error:
        print(f"mcpapps: error: {source} is not valid JSON: {error}", file=stderr)
        return 1
    except ConfigError as error:
        for problem in error.problems:
            print(f"mcpapps: error: {problem}", file=stderr)
        return 1
    except (ServersImportError, ImportRefused) as error:
        print(f"mcpapps: error: {error}", file=stderr)
        return 1
    _report(imported, report)
    return 0


def _config(path: Path, environ: Mapping[str, str]) -> Config:
    """The config the apps join; a file that does not exist yet is an empty one."""
    if path.exists():
        return load_config(path, environ)
    return config_from_data({}, Path(os.path.abspath(path)), environ)


def _append(
    path: Path,
    imported: Imported,
    source: Path,
    config: Config,
    environ: Mapping[str, str],
    report: TextIO,
) -> None:
    """Append the apps to config.toml: the file's own text is kept byte for byte."""
    if not imported.apps:
        print(f"nothing added to {path}", file=report)
        return
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    separator = "" if not old else ("\n" if old.endswith("\n") else "\n\n")
    text = old + separator + imported.toml(source, taken_entries=config.apps.entries)
    _check(text, path, imported, environ)
    _replace(path, text)
    added = ", ".join(_described(imported))
    print(f"added to {path}: {added}", file=report)


def _write_new(
    path: Path,
    imported: Imported,
    source: Path,
    config: Config,
    environ: Mapping[str, str],
    report: TextIO,
) -> None:
    if path.exists():
        raise ImportRefused(f"{path} exists already: remove it or choose another --out")
    text = imported.toml(source, taken_entries=config.apps.entries)
    _check(text, Path(os.path.abspath(path)), imported, environ)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}: {', '.join(_described(imported)) or 'no app'}", file=report)


def _write_manifests(imported: Imported, folder: Path, config: Config, report: TextIO) -> None:
    """One folder per app under `folder`, each with its manifest (named as the config says)."""
    for app_id, manifest in imported.manifests().items():
        (folder / app_id).mkdir(parents=True, exist_ok=False)
        path = folder / app_id / config.apps.manifest_name
        path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(f"wrote {path}", file=report)
    for app in imported.apps:
        if app.disabled:
            print(
                f"note: {app.id} was disabled where it came from: add [apps.entries.{app.id}]"
                " enabled = false to config.toml to keep it off",
                file=report,
            )
    searched = [p.resolve() for p in config.apps.discovery_paths]
    where = folder.resolve()
    if imported.apps and not any(where == p or p in where.parents for p in searched):
        print(
            f"note: {folder} is not under apps.discovery_paths of {config.path}: add it there"
            " for mcpapps to find these apps",
            file=report,
        )


def _check(text: str, path: Path, imported: Imported, environ: Mapping[str, str]) -> None:
    """Refuse to write text that would not load, or whose new apps would not validate once
    the variables listed are set."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ImportRefused(
            f"{path} would not be valid TOML with the apps appended ({error}); nothing was"
            " written: print them with --out - and add them by hand"
        ) from None
    with_variables = {**environ, **{v.name: "set" for v in imported.variables}}
    config = config_from_data(data, path, with_variables)
    new = {app.id for app in imported.apps}
    found = {app.id: app for app in discover(config, with_variables).apps if app.id in new}
    problems: list[Problem] = []
    for app_id in sorted(new):
        app = found.get(app_id)
        if app is None or app.state not in (AppState.VALIDATED, AppState.DISABLED):
            problems += list(app.errors) if app else [Problem(path, f"{app_id} is not found")]
    if problems:
        listed = "; ".join(str(p) for p in problems)
        raise ImportRefused(f"the apps would not validate ({listed}); nothing was written")


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all, keeping the file's mode."""
    folder = path.absolute().parent
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=folder, prefix=f".{path.name}.", delete=False
    ) as file:
        file.write(text)
    try:
        if path.exists():
            os.chmod(file.name, path.stat().st_mode & 0o7777)
        os.replace(file.name, path)
    except BaseException:
        os.unlink(file.name)
        raise


def _described(imported: Imported) -> list[str]:
    return [
        f"{app.id} ({app.fields.get('transport', 'stdio')}"
        + (f", from '{app.server}'" if app.id != app.server else "")
        + (", disabled" if app.disabled else "")
        + ")"
        for app in imported.apps
    ]


def _report(imported: Imported, report: TextIO) -> None:
    for skipped in imported.skipped:
        print(f"skipped: {skipped}", file=report)
    for unmapped in imported.unmapped:
        print(f"not imported: {unmapped}", file=report)
    if imported.variables:
        print("set these variables in the environment mcpapps runs in:", file=report)
        for variable in imported.variables:
            print(f"  {variable}", file=report)
