"""The command line against a running supervisor: `mcpapps apps`, `call`, `start`,
`stop`, `restart`, `logs`, `tools`, `reload` and `sessions` talk to the admin API (`web.admin.api`,
`web.admin.sessions`) over HTTP.

Where the supervisor is and which token it wants come from the same config file `mcpapps run`
reads (and the address file the running supervisor keeps in its state dir), so on the machine
that runs it no option is needed, even while that file is being edited. Every failure is a
`RemoteError`: one sentence saying what happened and what to do.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TextIO
from urllib.parse import quote, urlsplit

import attrs
import httpx2

from supervisor.model.address import (
    ADDRESS_FILE,
    AddressFileError,
    Locator,
    read_address,
    read_locator,
)
from supervisor.model.config import ConfigError, config_path, load_config
from supervisor.model.errors import McpappsError
from supervisor.model.tokens import GENERATED_TOKEN

TOKEN_ENV = "MCPAPPS_TOKEN"
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 30.0  # reading a status; commands and calls have deadlines on the server
SETTLE_TIMEOUT_S = 60.0  # how long `start`/`restart` wait for the app to be Running or Failed
POLL_S = 0.1
_STARTING = frozenset({"Validated", "Loaded"})
_SIGN_IN_HINT = "waits for a person to sign in: press Sign in for it on the control page"
NO_STDERR = "(no stderr lines yet)"


class RemoteError(McpappsError):
    """What went wrong talking to the supervisor, as one line for the user. `answer` is the
    supervisor's own JSON error answer when it gave one (`{"error": {...}, ...}`), for `--json`
    to print; None when nothing such came back (no connection, a non-JSON answer)."""

    def __init__(self, message: str, answer: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.answer = answer


@attrs.frozen
class Target:
    url: str
    token: str | None
    token_from: str | None = None  # where the token came from, to say so when it is refused
    # The problems of a config that could not be loaded; the supervisor was located anyway.
    config_problems: tuple[str, ...] = ()
    # What was passed over to locate it (an address file that cannot be believed).
    warnings: tuple[str, ...] = ()


NOTHING_SENT = "nothing was sent to the supervisor; use --url (and --token if it needs one)"
# What an HTTP header value can carry: printable ASCII (no line breaks, nothing to encode).
_HEADER_VALUE = re.compile(r"[\x20-\x7e]+")


def url_problem(url: str) -> str | None:
    """Why `url` cannot be the supervisor's address, or None."""
    if not re.match(r"https?://[^/]", url):
        return "must be an http(s) URL such as http://127.0.0.1:18789"
    try:
        httpx2.URL(url)
        _ = urlsplit(url).port  # a port out of range raises only when read
    except (httpx2.InvalidURL, ValueError) as error:
        return f"is not a valid URL ({error})"
    return None


def token_problem(token: str) -> str | None:
    """Why `token` cannot be sent as the supervisor's bearer token, or None."""
    if _HEADER_VALUE.fullmatch(token):
        return None
    return "must be printable ASCII (it is sent in an HTTP header)"


def find_target(
    given_config: str | None,
    url: str | None,
    token: str | None,
    environ: Mapping[str, str],
) -> Target:
    """The supervisor's URL and token. The URL: `--url`, else the one the supervisor running
    this config recorded in its state dir (where it listens now, even if the config was edited
    since), else the config's `[server]` address. The token: `--token`, else $MCPAPPS_TOKEN,
    else the config's token or token_file, else the token `mcpapps run` generated into the state
    dir. A config that cannot be loaded is read for those keys only; raises RemoteError when
    the supervisor cannot be located at all."""
    if token:
        token_from: str | None = "--token"
    elif environ.get(TOKEN_ENV):
        token, token_from = environ[TOKEN_ENV], TOKEN_ENV
    else:
        token_from = None
    path = config_path(given_config, environ)
    if url is not None and (token is not None or (given_config is None and not path.exists())):
        return _sendable(Target(url.rstrip("/"), token, token_from))
    problems: tuple[str, ...] = ()
    try:
        locator = Locator.of(load_config(path, environ))
    except ConfigError as error:
        locator, problems = read_locator(path, environ), tuple(str(p) for p in error.problems)
    recorded, warnings = _recorded_url(locator)
    if url is not None and not _is_config_server(url, locator, recorded):
        # The config's token is for its own server: never sent to another address.
        return _sendable(Target(url.rstrip("/"), token, token_from, (), warnings))
    url = url or recorded or locator.config_url
    if url is None:
        raise RemoteError(
            f"{problems[0] if problems else locator.path}; the supervisor's address cannot be"
            f" read from it, so {NOTHING_SENT}"
        )
    if token is None:
        try:
            token, token_from = config_token(locator)
        except RemoteError as error:
            raise RemoteError(f"{error}; nothing was sent to the supervisor; use --token") from None
    return _sendable(Target(url.rstrip("/"), token, token_from, problems, warnings))


def _sendable(target: Target) -> Target:
    """`target`, once its token is known to fit in a header: raises RemoteError naming where
    the token came from when it does not (sent, it failed as if the supervisor were down)."""
    if target.token is not None and (problem := token_problem(target.token)):
        raise RemoteError(
            f"the token from {target.token_from} {problem}; nothing was sent to the supervisor"
        )
    return target


def _recorded_url(locator: Locator) -> tuple[str | None, tuple[str, ...]]:
    """Where the supervisor running this config listens by its address file, and why that
    file was passed over: one that cannot be believed is ignored, as if its process were gone
    (the config's address is used)."""
    try:
        recorded = read_address(locator.state_dir, locator.path)
    except AddressFileError as error:
        return None, (f"{error}; ignored it",)
    if recorded is not None and (problem := url_problem(recorded)):
        why = f'its "url" {json.dumps(recorded)} {problem}'
        return None, (f"{locator.state_dir / ADDRESS_FILE}: {why}; ignored it",)
    return recorded, ()


def _is_config_server(url: str, locator: Locator, recorded: str | None) -> bool:
    """Whether `url` reaches the server the config describes: the address its supervisor
    recorded, or its port on its host or on a loopback name of this machine."""
    if recorded is not None and url.rstrip("/") == recorded:
        return True
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    loopback = {"localhost", "127.0.0.1", "::1", locator.host}
    return port == locator.port and (parts.hostname or "") in loopback


def config_token(locator: Locator) -> tuple[str | None, str | None]:
    """The token the supervisor uses with this config, and where it was found; (None, None)
    when there is none (a loopback server without auth needs none)."""
    if locator.token:
        return locator.token, f"server.token in {locator.path}"
    path = locator.token_file or locator.state_dir / GENERATED_TOKEN
    what = "server.token_file" if locator.token_file else "the generated token"
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        if locator.token_file is None:
            return None, None  # not generated: auth is off, or the supervisor never ran
        raise RemoteError(f"{what} {path} does not exist") from None
    except OSError as error:
        raise RemoteError(f"cannot read {what} {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise RemoteError(f"{what} {path} is not UTF-8 text") from None
    return (token, str(path)) if token else (None, None)


class Remote:
    """The admin API of one supervisor."""

    def __init__(self, target: Target) -> None:
        self.target = target
        headers = {"authorization": f"Bearer {target.token}"} if target.token else {}
        self._client = httpx2.Client(base_url=target.url, headers=headers)

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def get(self, path: str) -> Any:
        return self._request("GET", path, READ_TIMEOUT_S)

    def delete(self, path: str) -> Any:
        return self._request("DELETE", path, READ_TIMEOUT_S)

    def post(self, path: str, body: Any = None) -> Any:
        """A command or a call: no read deadline here, the server has its own."""
        return self._request("POST", path, None, body)

    def _request(self, method: str, path: str, read: float | None, body: Any = None) -> Any:
        timeout = httpx2.Timeout(read, connect=CONNECT_TIMEOUT_S)
        url = self.target.url
        try:
            response = self._client.request(method, path, json=body, timeout=timeout)
        except httpx2.TimeoutException:
            raise RemoteError(f"the supervisor at {url} did not answer in time") from None
        except httpx2.TransportError as error:
            raise RemoteError(
                f"cannot reach the supervisor at {url}: {error or type(error).__name__};"
                " is `mcpapps run` running?"
            ) from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        body = data.get("error") if isinstance(data, dict) else None
        # The admin API's error answer: the supervisor's, and `--json` prints it as it is.
        answer = data if isinstance(body, dict) and isinstance(body.get("message"), str) else None
        if response.status_code == 401:
            raise RemoteError(self._unauthorized(), answer)
        if answer is not None:
            raise RemoteError(answer["error"]["message"], answer)
        raise RemoteError(
            f"{url} answered {method} {path} with HTTP {response.status_code}, not as the mcpapps"
            " admin API does; is the address right?"
        )

    def _unauthorized(self) -> str:
        if self.target.token is None:
            return (
                f"the supervisor needs a token: pass --token, set {TOKEN_ENV}, or point --config"
                " at the config it runs with (its token, token_file or generated token is used)"
            )
        return (
            f"the supervisor refused the token from {self.target.token_from}: pass the one it"
            f" uses (--token, {TOKEN_ENV}, or the config it runs with)"
        )


# ---- the commands: each prints its answer and returns the exit status ------------------------


def apps(remote: Remote, *, as_json: bool, out: TextIO) -> int:
    data = remote.get("/admin/apps")
    if as_json:
        print_json(data, out)
        return 0
    listed = data["apps"]
    rows: list[tuple[str, ...]] = [("ID", "STATE", "PID", "RESTARTS", "TOOLS", "LAST ERROR")]
    rows += [_app_row(app) for app in listed]
    _print_table(rows, out)
    states = Counter(app["state"] for app in listed)
    summary = ", ".join(f"{n} {state}" for state, n in states.items()) or "none"
    print(f"\n{_count(len(listed), 'app')}: {summary}", file=out)
    return 0


def _app_row(app: Mapping[str, Any]) -> tuple[str, ...]:
    state = app["state"] + (" (gave up)" if app.get("gaveUp") else "")
    tools = app.get("counts", {}).get("tools")
    if app.get("disabledReason"):
        why = f"disabled: {app['disabledReason']}"
    elif app["state"] == "NeedsSignIn":
        why = _SIGN_IN_HINT + (f" ({app['lastError']})" if app.get("lastError") else "")
    elif app.get("previousError"):  # it runs again: the failure is not a current one
        why = f"previous failure: {app['previousError']}"
    else:
        why = app.get("lastError") or "-"
    return (
        app["id"],
        state,
        _cell(app.get("pid")),
        _cell(app.get("restarts")),
        _cell(tools if app["state"] == "Running" else None),
        why,
    )


def call(
    remote: Remote,
    name: str,
    arguments: dict[str, Any],
    *,
    as_json: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    """Exit status 1 when the tool itself reports an error (its result has isError)."""
    data = remote.post("/admin/call", {"name": name, "arguments": arguments})
    if as_json:
        print_json(data, out)
    else:
        print(data["text"], file=err if data["isError"] else out)
    return 1 if data["isError"] else 0


def control(
    remote: Remote,
    app_id: str,
    command: str,
    *,
    as_json: bool,
    out: TextIO,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """`start`, `stop`, `restart` or `logout`. All but stop wait until the app is Running, has
    failed or waits for a sign-in, so that the answer says where it is; exit status 1 when it
    failed."""
    path = f"/admin/apps/{quote(app_id, safe='')}"
    status = remote.post(f"{path}/{command}")["app"]
    if command != "stop":
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while status["state"] in _STARTING and time.monotonic() < deadline:
            sleep(POLL_S)
            detail = remote.get(path)
            status = {k: v for k, v in detail.items() if k not in ("stderr", "catalog")}
    if as_json:
        print_json({"app": status}, out)
    else:
        print(_status_line(status), file=out)
    return 1 if status["state"] == "Failed" else 0


def _status_line(status: Mapping[str, Any]) -> str:
    line = f"{status['id']}: {status['state']}"
    if status.get("pid"):
        line += f" (pid {status['pid']})"
    if status["state"] in _STARTING:
        line += f", still starting after {SETTLE_TIMEOUT_S:g} s; see `mcpapps apps`"
    elif status["state"] == "Failed" and status.get("lastError"):
        line += f": {status['lastError']}"
    elif status["state"] == "NeedsSignIn":
        line += f": {_SIGN_IN_HINT}"
    return line


def tools(remote: Remote, *, as_json: bool, out: TextIO) -> int:
    """Every tool of every Running app: what the model is offered, under which names, and why
    the others are not."""
    data = remote.get("/admin/tools")
    if as_json:
        print_json(data, out)
        return 0
    listed = data["tools"]
    rows: list[tuple[str, ...]] = [
        ("APP", "PUBLIC NAME", "MODEL ALIAS", "VISIBILITY", "UI", "NOT OFFERED BECAUSE")
    ]
    rows += [
        (
            t["app"],
            t["publicName"],
            _cell(t["alias"]),
            ",".join(t["visibility"]),
            _cell(t["uiResourceUri"]),
            "-" if t["offered"] else _cell(t["reason"]),
        )
        for t in listed
    ]
    _print_table(rows, out)
    offered = sum(t["offered"] for t in listed)
    print(f"\n{_count(len(listed), 'tool')}: {offered} offered to the model", file=out)
    return 0


def reload(remote: Remote, *, as_json: bool, out: TextIO) -> int:
    """Ask for a reload and print the diff; exit status 1 when anything was refused."""
    data = remote.post("/admin/reload")
    if as_json:
        print_json(data, out)
    else:
        for key in ("started", "stopped", "restarted", "unchanged"):
            print(f"{key}: {', '.join(data[key]) or '-'}", file=out)
        if data.get("stillStopped"):
            print(f"still stopped: {', '.join(data['stillStopped'])}", file=out)
        for refusal in data["refused"]:
            for problem in refusal["problems"]:
                print(f"refused {refusal['app']}: {problem}", file=out)
        for key in data["needsRestart"]:
            print(f"needs a restart: {key} changed", file=out)
    return 1 if data["refused"] else 0


def logs(remote: Remote, app_id: str, *, as_json: bool, out: TextIO, err: TextIO) -> int:
    """The last lines the app wrote to stderr (up to 200, kept by the supervisor). With none
    yet, a note says so on standard error: standard output holds only the app's lines."""
    data = remote.get(f"/admin/apps/{quote(app_id, safe='')}")
    if as_json:
        print_json(data, out)
    elif not data["stderr"]:
        print(NO_STDERR, file=err)
    else:
        for line in data["stderr"]:
            print(line, file=out)
    return 0


def sessions(remote: Remote, *, as_json: bool, out: TextIO) -> int:
    """The saved chat sessions, the one with the latest turn first."""
    data = remote.get("/admin/sessions")
    if as_json:
        print_json(data, out)
        return 0
    listed = data["sessions"]
    rows: list[tuple[str, ...]] = [("ID", "TURNS", "LAST TURN", "STARTED", "RUNNING")]
    rows += [
        (
            s["id"],
            str(s["turns"]),
            _local_time(s["updatedAt"]),
            _local_time(s["createdAt"]),
            "yes" if s["running"] else "-",
        )
        for s in listed
    ]
    _print_table(rows, out)
    turns = sum(s["turns"] for s in listed)
    print(f"\n{_count(len(listed), 'session')}, {_count(turns, 'turn')}", file=out)
    return 0


def delete_session(remote: Remote, session_id: str, *, as_json: bool, out: TextIO) -> int:
    data = remote.delete(f"/admin/sessions/{quote(session_id, safe='')}")
    if as_json:
        print_json(data, out)
    else:
        print(f"deleted session {data['deleted']}", file=out)
    return 0


def _local_time(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def cluster(remote: Remote, *, as_json: bool, out: TextIO, now: float | None = None) -> int:
    data = remote.get("/admin/cluster")
    if as_json:
        print_json(data, out)
        return 0
    now = time.time() if now is None else now
    rows: list[tuple[str, ...]] = [("ID", "URL", "VERSION", "APPS RUNNING", "LAST SEEN")]
    for replica in data["replicas"]:
        running = sum(app["state"] == "Running" for app in replica["apps"])
        ago = max(0, round(now - replica["lastSeen"]))
        seen = f"{ago} s ago" + (" (silent)" if replica["silent"] else "")
        rows.append((replica["id"], replica["url"], replica["version"], str(running), seen))
    _print_table(rows, out)
    silent = sum(r["silent"] for r in data["replicas"])
    print(f"\n{_count(len(data['replicas']), 'supervisor')}, {silent} silent", file=out)
    return 0


def print_json(data: Any, out: TextIO) -> None:
    print(json.dumps(data, indent=2), file=out)


def _print_table(rows: list[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
