"""The `mcpapps` command line."""

from __future__ import annotations

import argparse
import errno
import io
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

import attrs

from supervisor import __version__
from supervisor.model.config import CONFIG_ENV, Config, ConfigError, config_path, load_config
from supervisor.model.discovery import DiscoveredApp, Discovery, discover
from supervisor.model.lifecycle import AppState
from supervisor.model.manifest import ID_RULE, AppDefinition, camel, manifest_to_json
from supervisor.model.problems import Problem, display_path
from supervisor.process.logs import configure_logging


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mcpapps", description="Host MCP Apps: discover, supervise and serve them."
    )
    parser.add_argument("--version", action="version", version=f"mcpapps {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate_parser = commands.add_parser(
        "validate",
        help="check config.toml and every manifest without starting anything",
        description="Check config.toml and every app manifest without starting anything."
        " Exit status 0 when every app is Validated or Disabled, 1 when anything is invalid.",
    )
    validate_parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"the config file (default: ${CONFIG_ENV}, else ./config.toml)",
    )
    validate_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    run_parser = commands.add_parser(
        "run",
        help="run every enabled app under supervision, in the foreground",
        description="Start every enabled app, keep them running, and stop them all on SIGTERM"
        " or SIGINT. Logs go to standard error.",
    )
    run_parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"the config file (default: ${CONFIG_ENV}, else ./config.toml)",
    )
    import_parser = commands.add_parser(
        "import-openclaw",
        help="write a config.toml from an OpenClaw.NET appsettings.json (its McpApps section)",
        description="Read the McpApps section of an OpenClaw.NET appsettings.json and write the"
        " same settings as an mcpapps config.toml; every key that cannot be mapped is reported"
        " (and kept as a comment in the file), with the reason.",
    )
    import_parser.add_argument("appsettings", metavar="APPSETTINGS", help="appsettings.json")
    import_parser.add_argument(
        "--out", metavar="PATH", help="write the config here (default: print it)"
    )
    servers_parser = commands.add_parser(
        "import",
        help="add the MCP servers of a Claude Desktop, Cursor or VS Code config as apps",
        description="Read the MCP servers of a Claude Desktop or Cursor config (mcpServers) or"
        " a VS Code one (servers, inputs), JSON with comments included, and add them to"
        " config.toml as [apps.inline.<id>] tables (appended: the file's own text is kept)."
        " Secrets in env and headers become ${env:NAME} references, never copied: the"
        " variables to set are listed. Every key that cannot be mapped is reported, with why;"
        " a server whose id the config has already is skipped.",
    )
    servers_parser.add_argument("file", metavar="FILE", help="the MCP client's config file")
    servers_parser.add_argument(
        "--config",
        metavar="CFG",
        help=f"the config to add to (default: ${CONFIG_ENV}, else ./config.toml)",
    )
    written = servers_parser.add_mutually_exclusive_group()
    written.add_argument(
        "--out",
        metavar="PATH|-",
        help="write the new tables to PATH (a new file), or print them with '-',"
        " instead of adding them to the config",
    )
    written.add_argument(
        "--manifests",
        metavar="DIR",
        help="write one manifest folder per server under DIR instead",
    )
    remote_parsers = _add_remote_commands(commands)
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.config, environ=os.environ)
    if args.command == "import-openclaw":
        return import_openclaw(Path(args.appsettings), args.out and Path(args.out))
    if args.command == "import":
        from supervisor.process.importing import run_import

        return run_import(
            Path(args.file),
            config_file=config_path(args.config, os.environ),
            out=args.out,
            manifests=args.manifests and Path(args.manifests),
            environ=os.environ,
            stdout=_printable_stream(sys.stdout),
            stderr=_printable_stream(sys.stderr),
        )
    if args.command in remote_parsers:
        return _remote_command(args, remote_parsers[args.command])
    try:
        return validate(args.config, as_json=args.json, environ=os.environ, out=sys.stdout)
    except BrokenPipeError:
        # The reader went away (`mcpapps validate | head`): say nothing more, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _add_remote_commands(commands: Any) -> dict[str, argparse.ArgumentParser]:
    """The commands that talk to a running supervisor through its admin API."""
    common = _common_options()

    def add(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[common], help=summary, description=summary)

    parsers = {
        "apps": add(
            "apps",
            "list every app of a running supervisor: state, pid, restarts, tools, last error",
        ),
        "call": add("call", "call a tool of a running supervisor by its public name"),
        "cluster": add(
            "cluster",
            "list every supervisor that shares the running one's session store: id, URL,"
            " version, apps running, when last seen",
        ),
        "tools": add(
            "tools",
            "list every tool of a running supervisor: public name, model alias, visibility,"
            " UI, and why a tool is not offered to the model",
        ),
        "reload": add(
            "reload",
            "re-read the config and the manifests of a running supervisor and apply the"
            " difference; prints what was started, stopped, restarted, unchanged and refused",
        ),
    }
    parsers["sessions"] = add(
        "sessions",
        "list the saved chat sessions of a running supervisor (turns, last turn, running), or"
        " delete one: `mcpapps sessions delete ID`",
    )
    sessions = parsers["sessions"].add_subparsers(dest="sessions_command", metavar="delete")
    delete = sessions.add_parser(
        "delete",
        parents=[_common_options(argparse.SUPPRESS)],
        help="delete a saved chat session (refused while it has a turn running)",
        description="Delete a saved chat session: its messages are gone for good. Refused"
        " while the session has a turn running or waiting.",
    )
    delete.add_argument("session", metavar="ID", help="the session's id")
    call = parsers["call"]
    call.add_argument(
        "tool", metavar="TOOL", help="the tool's public name (such as grocery.get_stores)"
    )
    call.add_argument(
        "arguments", nargs="?", metavar="JSON", help="the arguments as a JSON object (default {})"
    )
    for name, summary in (
        ("start", "start an app (also one that gave up or awaits a restart); wait until it runs"),
        ("stop", "stop an app; it stays stopped until started again"),
        ("restart", "restart an app and wait until it runs"),
        ("logs", "print the last lines an app wrote to its stderr"),
        (
            "logout",
            'forget an app\'s sign-in (auth = "oauth"): its tokens are deleted and it waits'
            " for a person to sign in again (NeedsSignIn)",
        ),
    ):
        parsers[name] = add(name, summary)
        parsers[name].add_argument("app", metavar="APP", help="the app's id")
    return parsers


def _common_options(default: Any = None) -> argparse.ArgumentParser:
    """The options every remote command takes. A subcommand's copy has them default to
    `argparse.SUPPRESS`, so that one given before the subcommand is not reset by it."""
    common = argparse.ArgumentParser(add_help=False, argument_default=default)
    common.add_argument(
        "--config",
        metavar="PATH",
        help=f"the config the supervisor runs with, for its address and token (default:"
        f" ${CONFIG_ENV}, else ./config.toml)",
    )
    common.add_argument(
        "--url", metavar="URL", help="the supervisor's address (default: from the config)"
    )
    common.add_argument(
        "--token",
        metavar="TOKEN",
        help="the supervisor's token (default: $MCPAPPS_TOKEN, else from the config)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=default if default is not None else False,
        help="print the API's JSON answer",
    )

    return common


def _remote_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Imported here: `validate` and `run` need no HTTP client.
    from actors.arguments import ArgumentError, parse_arguments
    from supervisor.process import remote

    # Found before anything is sent: the request would fail, or reach another route.
    if args.url is not None and (problem := remote.url_problem(args.url)):
        parser.error(f"--url {problem}, not {json.dumps(args.url)}")
    if args.token and (problem := remote.token_problem(args.token)):
        parser.error(f"--token {problem}")
    if getattr(args, "app", None) is not None and (problem := _app_id_problem(args.app)):
        parser.error(problem)
    arguments: dict[str, Any] = {}
    if args.command == "call":
        try:
            arguments = parse_arguments(args.arguments)
        except ArgumentError as error:
            parser.error(f"the arguments of `call`: {error}")
    out = sys.stdout if args.json else _printable_stream(sys.stdout)
    err = _printable_stream(sys.stderr)
    try:
        target = remote.find_target(args.config, args.url, args.token, os.environ)
        if target.config_problems and args.command != "reload":  # a reload's answer says it
            print(
                f"mcpapps: warning: {target.config_problems[0]} (the supervisor was reached"
                " anyway; `mcpapps validate` lists every problem)",
                file=err,
            )
        for warning in target.warnings:
            print(f"mcpapps: warning: {warning}", file=err)
        with remote.Remote(target) as api:
            if args.command == "apps":
                return remote.apps(api, as_json=args.json, out=out)
            if args.command == "call":
                return remote.call(api, args.tool, arguments, as_json=args.json, out=out, err=err)
            if args.command == "tools":
                return remote.tools(api, as_json=args.json, out=out)
            if args.command == "cluster":
                return remote.cluster(api, as_json=args.json, out=out)
            if args.command == "reload":
                return remote.reload(api, as_json=args.json, out=out)
            if args.command == "sessions" and args.sessions_command == "delete":
                return remote.delete_session(api, args.session, as_json=args.json, out=out)
            if args.command == "sessions":
                return remote.sessions(api, as_json=args.json, out=out)
            if args.command == "logs":
                return remote.logs(api, args.app, as_json=args.json, out=out, err=err)
            return remote.control(api, args.app, args.command, as_json=args.json, out=out)
    except remote.RemoteError as error:
        if args.json and error.answer is not None:
            # Asked for JSON, the supervisor's error answer is printed as any other answer:
            # on stdout, for a script to read (the exit status says it failed).
            remote.print_json(error.answer, out)
        else:
            print(f"mcpapps: error: {error}", file=err)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _app_id_problem(app_id: str) -> str | None:
    """Why `app_id` cannot name an app in the admin API's paths: they would reach another route
    (a '/' splits the path, '.' and '..' are taken out of it)."""
    if app_id and "/" not in app_id and app_id not in (".", ".."):
        return None
    return f"{json.dumps(app_id)} is not an app id: app ids are {ID_RULE}"


def import_openclaw(source: Path, out: Path | None) -> int:
    """Print (or write to `out`) the config.toml for an OpenClaw.NET appsettings.json; report
    what was not imported on standard error. 1 when nothing could be imported."""
    from supervisor.model import jsontext, openclaw

    err = _printable_stream(sys.stderr)
    try:
        data = jsontext.parse(source.read_bytes().decode("utf-8-sig"))
        if out is not None and out.exists():
            raise ValueError(f"{out} exists already: remove it or choose another --out")
        imported = openclaw.import_openclaw(
            data, source=source, out_folder=(out or Path()).absolute().parent
        )
    except OSError as error:
        print(f"mcpapps: error: cannot read {source}: {error.strerror or error}", file=err)
        return 1
    except UnicodeDecodeError as error:
        print(f"mcpapps: error: {source} is not UTF-8 text ({error.reason})", file=err)
        return 1
    except jsontext.JSONTextError as error:
        print(f"mcpapps: error: {source} is not valid JSON: {error}", file=err)
        return 1
    except (ValueError, openclaw.OpenClawImportError) as error:
        print(f"mcpapps: error: {error}", file=err)
        return 1
    if out is None:
        print(imported.toml, end="", file=_printable_stream(sys.stdout))
    else:
        out.write_text(imported.toml, encoding="utf-8")
        print(f"wrote {out}; check it with: mcpapps validate --config {out}", file=err)
    for problem in imported.unmapped:
        print(f"not imported: {problem}", file=err)
    return 0


def run(given_path: str | None, *, environ: Mapping[str, str]) -> int:
    """Run the supervisor until SIGTERM or SIGINT; 0 after a clean stop, 1 on config errors."""
    path = config_path(given_path, environ)
    try:
        config = load_config(path, environ)
    except ConfigError as error:
        _print_config_errors(error.problems, _printable_stream(sys.stderr))
        return 1
    configure_logging(config.log.level, config.log.format)
    # Imported here: the SDK takes most of a second to import, which `validate` need not pay.
    import trio

    from supervisor.model.tokens import TokenError
    from supervisor.process.run import StartupError, run_supervisor

    try:
        trio.run(run_supervisor, config, environ)
    except (TokenError, StartupError) as error:
        print(f"mcpapps: error: {error}", file=sys.stderr)
        return 1
    except (OSError, BaseExceptionGroup) as error:
        leaf = _first_os_error(error)
        if leaf is None:
            raise
        where = f"{config.server.host}:{config.server.port}"
        why = leaf.strerror or leaf
        # The sandbox port's error names its own port and what to do.
        line = why if _is_sandbox_error(leaf) else f"cannot serve on {where}: {why}"
        print(f"mcpapps: error: {line}", file=sys.stderr)
        return 1
    return 0


def _is_sandbox_error(error: OSError) -> bool:
    from web.sandbox import SandboxUnavailable

    return isinstance(error, SandboxUnavailable)


_BIND_ERRORS = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


def _first_os_error(error: BaseException) -> OSError | None:
    """The socket error that stopped the front door from listening (port taken, address not
    here, port not allowed); any other error is a bug and keeps its traceback."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := _first_os_error(inner)) is not None:
                return found
        return None
    return error if isinstance(error, OSError) and error.errno in _BIND_ERRORS else None


def validate(
    given_path: str | None, *, as_json: bool, environ: Mapping[str, str], out: TextIO
) -> int:
    """Print what discovery finds; 0 when every app is Validated or Disabled, else 1."""
    if not as_json:  # JSON is printed as ASCII, escapes and all
        out = _printable_stream(out)
    path = config_path(given_path, environ)
    try:
        config = load_config(path, environ)
    except ConfigError as error:
        if as_json:
            print(json.dumps(_report(path, error.problems, None), indent=2), file=out)
        else:
            _print_config_errors(error.problems, out)
        return 1

    discovery = discover(config, environ)
    if as_json:
        print(json.dumps(_report(config.path, (), discovery), indent=2), file=out)
    else:
        _print_report(config, discovery, out)
    return 0 if _ok(discovery) else 1


def _ok(discovery: Discovery) -> bool:
    return all(app.state in (AppState.VALIDATED, AppState.DISABLED) for app in discovery.apps)


def _print_config_errors(problems: Sequence[Problem], out: TextIO) -> None:
    for problem in problems:  # with the config's whole path: it may not be where one thinks
        print(f"error: {problem}", file=out)
    several = len(problems) > 1
    print(
        f"\n{len(problems)} problem{'s' if several else ''} with the config; no app was checked."
        f" Fix {'them' if several else 'it'} and run `mcpapps validate` again.",
        file=out,
    )


def _print_report(config: Config, discovery: Discovery, out: TextIO) -> None:
    base = config.folder
    print(f"config: {config.path}", file=out)
    rows = [
        (
            app.id or "(no id)",
            app.state.value if app.valid else f"{app.state} (invalid)",
            app.transport or "-",
            _source(app, base),
        )
        for app in discovery.apps
    ]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(3)]
    for app, row in zip(discovery.apps, rows, strict=True):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]), file=out)
        if app.disabled_reason:
            print(f"    disabled: {app.disabled_reason}", file=out)
        for problem in app.errors:
            print(f"    error: {problem.shown(base)}", file=out)
        for problem in app.warnings:
            print(f"    warning: {problem.shown(base)}", file=out)
    for problem in discovery.warnings:
        print(f"warning: {problem.shown(base)}", file=out)

    counts = Counter(row[1] for row in rows)
    summary = ", ".join(f"{n} {state}" for state, n in counts.items()) or "none found"
    total = len(rows)
    print(f"\n{total} app{'' if total == 1 else 's'}: {summary}", file=out)
    if not _ok(discovery):
        print("Fix the errors above and run `mcpapps validate` again.", file=out)


def _printable_stream(out: TextIO) -> TextIO:
    """`out`, escaping what a terminal must not receive raw; written to like any text stream."""
    return cast(TextIO, _Printable(out))


class _Printable(io.TextIOBase):
    """A text stream that escapes what a terminal must not receive raw."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(_printable(text))


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _printable(text: str) -> str:
    """Control characters (terminal escapes) and lone surrogates (undecodable file names,
    `\\ud800` in JSON) as visible escapes, so ids and paths from files cannot garble the
    terminal or make printing fail."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


def _finite(value: Any) -> Any:
    """`value` with NaN and infinities (JSON5 allows them in metadata) as strings, since JSON
    has no spelling for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _source(app: DiscoveredApp, base: Path) -> str:
    shown = display_path(app.source, base)
    return f"{shown} [apps.inline.{app.id}]" if app.inline else shown


def _report(
    path: Path, config_errors: Sequence[Problem], discovery: Discovery | None
) -> dict[str, Any]:
    """The `--json` report: the same content as the text one."""
    apps = discovery.apps if discovery else ()
    report = {
        "ok": not config_errors and discovery is not None and _ok(discovery),
        "config": os.path.abspath(path),
        "configErrors": [_problem_json(p) for p in config_errors],
        "warnings": [_problem_json(p) for p in discovery.warnings] if discovery else [],
        "apps": [_app_json(app) for app in apps],
    }
    return _finite(report)


def _app_json(app: DiscoveredApp) -> dict[str, Any]:
    return {
        "id": app.id,
        "state": app.state.value,
        "valid": app.valid,
        "transport": app.transport,
        "source": str(app.source),
        "inline": app.inline,
        "disabledReason": app.disabled_reason,
        "errors": [_problem_json(p) for p in app.errors],
        "warnings": [_problem_json(p) for p in app.warnings],
        "definition": _definition_json(app.definition) if app.definition else None,
    }


def _definition_json(definition: AppDefinition) -> dict[str, Any]:
    return {
        "manifest": manifest_to_json(definition.manifest),
        "protocol": definition.protocol,
        "supervision": {camel(k): v for k, v in attrs.asdict(definition.supervision).items()},
    }


def _problem_json(problem: Problem) -> dict[str, str]:
    return {"source": str(problem.source), "message": problem.message}
