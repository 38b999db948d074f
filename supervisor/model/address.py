"""Where a running supervisor is, for the command line: the address file `mcpapps run` writes
into its state dir, and the few config keys that locate it, read even from a config that cannot
be loaded.

The address file says where the supervisor listens *now*: a config edited since (a new port, a
typo) no longer does, and the command line is what reports that (`mcpapps reload`). It names the
config it was started with, the supervisor's pid and when that process started, so that it is
only believed for that config while that process lives (not another one given the same pid
since).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard

import attrs

from supervisor.model.config import (
    ENV_OVERRIDES,
    Config,
    ServerConfig,
    StateConfig,
    url_host,
)
from supervisor.model.errors import McpappsError

ADDRESS_FILE = "supervisor.json"  # file name inside [state] dir


def loopback_url(host: str, port: int) -> str:
    """Where a server bound to `host:port` is reached from this machine: a wildcard bind on
    loopback."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        if address.is_unspecified:
            host = "::1" if address.version == 6 else "127.0.0.1"
    return f"http://{url_host(host)}:{port}"


@attrs.frozen
class Locator:
    """What the command line needs of a config to reach its supervisor. `host` and `port` are
    None when the config cannot say (then only the address file can)."""

    path: Path  # the config file, absolute
    host: str | None
    port: int | None
    token: str | None
    token_file: Path | None
    state_dir: Path

    @classmethod
    def of(cls, config: Config) -> Locator:
        server = config.server
        return cls(
            config.path,
            server.host,
            server.port,
            server.token,
            server.token_file,
            config.state.dir,
        )

    @property
    def config_url(self) -> str | None:
        """Where the config says the supervisor listens."""
        if self.host is None or self.port is None:
            return None
        return loopback_url(self.host, self.port)


def read_locator(path: Path, environ: Mapping[str, str]) -> Locator:
    """The locating keys of a config that cannot be loaded (an unknown key, a bad value
    elsewhere, even TOML that does not parse, whose lines are read one by one: `salvaged`):
    each one that is present and well-formed, the default when absent, the `MCPAPPS_*`
    overrides applied. A malformed `host` or `port` is
    None: a guessed address would reach some other server."""
    path = Path(os.path.abspath(path))
    raw: dict[str, Any] = {}
    parsed = False  # no default is assumed for the address then: it may be elsewhere
    try:
        text = path.read_bytes().decode("utf-8")
        raw, parsed = tomllib.loads(text), True
    except (OSError, UnicodeDecodeError):
        pass
    except tomllib.TOMLDecodeError:
        raw = salvaged(text)
    server = _table(raw, "server")
    state = _table(raw, "state")
    for variable, (_, key) in ENV_OVERRIDES.items():  # all of them [server] keys
        if value := environ.get(variable, "").strip():
            server[key] = value
            if key == "token":
                server.pop("token_file", None)
    defaults = ServerConfig()
    host = server.get("host", defaults.host if parsed else None)
    port = server.get("port", defaults.port if parsed else None)
    if isinstance(port, str) and port.isascii() and port.isdigit():
        port = int(port)
    token = server.get("token")
    token_file = server.get("token_file")
    state_dir = state.get("dir", StateConfig().dir)
    return Locator(
        path,
        host if isinstance(host, str) and host else None,
        port if type(port) is int and 1 <= port <= 65535 else None,
        token if isinstance(token, str) and token else None,
        _beside(path, token_file) if _usable_path(token_file) else None,
        _beside(path, state_dir if _usable_path(state_dir) else StateConfig().dir),
    )


# A table's header on a line of its own: `[name]`, spaces and a comment allowed.
_HEADER = re.compile(r"\s*\[\s*([A-Za-z0-9_-]+)\s*\]\s*(?:#.*)?")
_LOCATING = ("server", "state")  # the tables whose keys locate a supervisor


def salvaged(text: str) -> dict[str, Any]:
    """The `[server]` and `[state]` keys of TOML that does not parse, as far as they can be
    read: each from a line of its own that parses alone, `key = value` under its table's
    header or `table.key = value` before any header. A syntax error elsewhere (the common
    case: a typo while editing) spoils nothing here; a line it spoils is left out, and a key
    left out is taken as absent. Only the address file can then give the address, unless the
    line that gives it parsed: a state dir read wrongly finds no address file for this
    config, which names its config."""
    found: dict[str, dict[str, Any]] = {}
    table: str | None = ""  # "" before any header; None under one that is not `[name]`
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            header = _HEADER.fullmatch(line)
            table = header.group(1) if header else None
            continue
        if table is None or (table and table not in _LOCATING):
            continue
        try:
            pairs = tomllib.loads(line)
        except tomllib.TOMLDecodeError:
            continue
        for name, value in pairs.items() if not table else [(table, pairs)]:
            if name in _LOCATING and isinstance(value, dict):
                found.setdefault(name, {}).update(value)
    return found


def _usable_path(value: Any) -> TypeGuard[str | Path]:
    """A path a config may name (a NUL in it is refused when the config loads)."""
    return isinstance(value, str | Path) and bool(str(value)) and "\x00" not in str(value)


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    table = raw.get(name)
    return dict(table) if isinstance(table, dict) else {}


def _beside(config: Path, path: str | Path) -> Path:
    return Path(os.path.normpath(config.parent / path))


# ---- the address file --------------------------------------------------------------------------


def write_address(config: Config, pid: int) -> Path:
    """Record where the supervisor running `config` listens; raises OSError when it cannot."""
    path = config.state.dir / ADDRESS_FILE
    record: dict[str, Any] = {
        "url": loopback_url(config.server.host, config.server.port),
        "pid": pid,
        "config": os.path.realpath(config.path),
    }
    if (started := process_start(pid)) is not None:  # where the system says: Linux
        record["started"] = started
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{ADDRESS_FILE}.{pid}")
    temporary.write_text(json.dumps(record) + "\n")
    os.replace(temporary, path)  # whole or not at all: a reader never sees half of it
    return path


class AddressFileError(McpappsError, ValueError):
    """An address file that exists but cannot be believed: unreadable, not the JSON object
    `mcpapps run` writes, a pid no process can have, or a pid another process has now. Its
    message names the file and why."""


# The largest pid a process can have: Linux caps pid_max at 2**22, and `os.kill` takes a C int.
_MAX_PID = 2**31 - 1


def remove_address(state_dir: Path, pid: int) -> None:
    """Remove the address file if it is still this process's (another supervisor with the same
    state dir may have written its own since)."""
    path = state_dir / ADDRESS_FILE
    try:
        record = _record(path)
    except AddressFileError:
        return  # not one this process wrote
    if record is not None and record.get("pid") == pid:
        with contextlib.suppress(OSError):
            path.unlink()


def read_address(state_dir: Path, config_path: Path) -> str | None:
    """The URL of the supervisor that runs `config_path`, from its address file: None when
    there is none, it is for another config, or its process is gone. Raises AddressFileError
    when the file is there but is not one `mcpapps run` wrote (the caller says so and goes on
    without it)."""
    path = state_dir / ADDRESS_FILE
    record = _record(path)
    if record is None:
        return None
    url, pid, started = record.get("url"), record.get("pid"), record.get("started")
    if (
        not isinstance(url, str)
        or type(pid) is not int
        or not 0 < pid <= _MAX_PID
        or (started is not None and type(started) is not int)
    ):
        raise AddressFileError(
            f'{path} is not an address file of `mcpapps run`: it needs a "url" string and'
            f' a "pid" from 1 to {_MAX_PID} (and "started", if there, is a whole number)'
        )
    if record.get("config") != os.path.realpath(config_path) or not _alive(pid):
        return None
    # A file written without "started" (an older mcpapps, a system without /proc) is believed
    # by its pid alone; so is one whose process's start cannot be read here.
    if started is not None and (now := process_start(pid)) is not None and now != started:
        raise AddressFileError(
            f"{path}: the supervisor that wrote it is gone, and its pid {pid} is another"
            " process's now"
        )
    return url


def _record(path: Path) -> dict[str, Any] | None:
    """The address file's object; None when there is no file."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise AddressFileError(f"cannot read {path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: deep nesting
        raise AddressFileError(f"{path} is not valid JSON") from None
    if not isinstance(data, dict):
        raise AddressFileError(f"{path} is not a JSON object")
    return data


def process_start(pid: int) -> int | None:
    """When process `pid` started, in clock ticks after boot: with its pid, what tells it from a
    later process given the same pid. Field 22 of /proc/<pid>/stat (Linux); None where that
    cannot be read (no /proc, the process gone, a /proc that hides other users' processes)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # Field 2 is the command name in parentheses, which may hold spaces and ')' itself: the
    # fields are counted from after its last ')', where field 3 begins.
    fields = stat[stat.rfind(b")") + 1 :].split()
    try:
        return int(fields[22 - 3])
    except (IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True
