"""The `python3` the tests' apps are started with, when the worker has a fork server.

An app the supervisor starts as `python3 script.py ...` is this launcher: it asks the worker's
fork server (tests/support/forkserver.py), which has imported the MCP SDK already, to fork a
child that runs the script with the launcher's arguments, working folder, environment and
standard streams. The launcher then stands in for that child, so that the supervisor sees what
it would see of the app itself:
- the app's streams are the supervisor's pipes; the launcher lets go of its own copies, so the
  supervisor sees them close when the app closes them;
- signals sent to the launcher (or its process group) go on to the app, and the launcher ends
  only when the app has, with its exit status or by the signal that ended it;
- a launcher that is killed outright (SIGKILL cannot be passed on) closes its connection, and
  the fork server then kills the app.

Anything that is not `python3 script.py ...` (a flag first, no script), no fork server, or a
server that refuses (an environment the interpreter reads at start differs) starts the real
interpreter in the launcher's place, as if it had never been there.

It runs with `-S -E` and imports only the standard library, so it costs a few milliseconds
where an app importing the SDK costs about a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from typing import Any

_MESSAGE = 1 << 20
LAUNCHER_PID = "MCPAPPS_TESTS_LAUNCHER_PID"
# What a supervisor or a test sends an app; SIGKILL and SIGSTOP cannot be caught.
_FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGCONT,
)


def main(python: str, address: str) -> None:
    args = sys.argv[1:]
    if args and not args[0].startswith("-"):
        status = _run_forked(address, args)
        if status is not None:
            _end_as(status)
    os.execv(python, [python, *args])


def _run_forked(address: str, args: list[str]) -> int | None:
    """The forked app's exit status (negative: the signal that ended it), or None when the
    fork server did not take the command."""
    # Signals are caught from the start: one that comes before the app's pid is known (the
    # supervisor stopping an app that has just started) is kept and passed on once it is.
    app: list[int] = []  # the app's pidfd, once known
    early: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if not app:
            early.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(app[0], signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(address)
        # The app learns the pid the supervisor knows it by: the fixture app's `pid` tool says it.
        env = {**os.environ, LAUNCHER_PID: str(os.getpid())}
        request = {"kind": "python", "argv": args, "cwd": os.getcwd(), "env": env}
        socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
        answer: dict[str, Any] = json.loads(connection.recv(_MESSAGE) or b"{}")
    except OSError:
        connection.close()
        answer = {}
    if "pid" not in answer:
        for signum in _FORWARDED:  # the real interpreter takes its place, signals and all
            signal.signal(signum, signal.SIG_DFL)
        for signum in early:
            os.kill(os.getpid(), signum)
        connection.close()
        return None
    with contextlib.suppress(ProcessLookupError):  # ended already: its status is on the way
        app.append(os.pidfd_open(answer["pid"]))
    for signum in early:
        forward(signum, None)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    message = connection.recv(_MESSAGE)
    # No answer: the fork server ended, and it ends what it forked with SIGKILL.
    return int(json.loads(message)["status"]) if message else -signal.SIGKILL


def _end_as(status: int) -> None:
    if status >= 0:
        os._exit(status)
    signal.signal(-status, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [-status])
    os.kill(os.getpid(), -status)
    os._exit(128 - status)
