"""`mcpapps` for the tests, forked from a process that has already imported it.

Most of the suite's CPU went into starting Python processes, and an `mcpapps run` is the
dearest of them: about 1.5 s of CPU before it serves, nearly all of it importing the MCP SDK
(pydantic builds its models) and our own modules. The tests start a few hundred. So each test
worker keeps one fork server: a process that has imported `supervisor.process.cli` and
everything `mcpapps run` imports, and that forks once for each `mcpapps` a test starts. The
child is then what the installed command is: its own process, running
`supervisor.process.cli.main()` with the argv, working folder, environment and standard streams
the test gave, signalled by the test, its exit status (or the signal that ended it) reported back
to the test. What it does not redo is the import.

What differs from a process the test started itself, and why it does not matter here:
- Its parent is the fork server, not the test; the fork server tells the test its exit status.
  The supervisor's own children (its apps, the reaper) are its own, as before.
- Its command line (`/proc/<pid>/cmdline`) names the fork server; `sys.argv` is the command's.
- It shares the fork server's hash seed. `random` is reseeded in every child (CPython does it at
  fork), and nothing of ours keeps state between import and `main()`.

The apps the tests start are Python too, and each pays the same import of the SDK (about a
second of CPU; a few hundred of them are started). So the fork server forks them as well: a test
names `python()` (or puts its folder first on PATH, as `environment()` does, for manifests that
say `python3`) as the app's command, and that is a small launcher (tests/support/forklauncher.py)
that hands its arguments, folder, environment and standard streams here and stands in for the
forked app until it ends. An app that must keep what the launcher cannot pass on (a process
group of its own for its grandchildren, a pid the test compares, SIGSTOP) is started as is.

`MCPAPPS_TESTS_FORK=0` in the environment turns it off: every `mcpapps` and every app is then
started from scratch, as a user starts it (the way to check that a failure is not the fork
server's).

The wire between a test (or a launcher) and the fork server is a Unix `SOCK_SEQPACKET` socket
(one message is one request, whole): the asker sends the command as JSON with its three standard
streams attached (`SCM_RIGHTS`), the server answers `{"pid": N}` once it has forked, then
`{"status": S}` once the child has ended. A launcher whose connection closes before that was
killed: the server kills its app.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import locale
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

MCPAPPS = str(Path(sys.executable).parent / "mcpapps")
# What the child imports anyway; each costs its import once, in the fork server.
PRELOAD = (
    "supervisor.process.cli",
    "supervisor.process.run",
    "supervisor.process.remote",
    "web.sandbox",
    "actors.chat.openai_engine",
    "actors.chat.pgstore",
    # and what the tests' Python apps import (tests/support/forklauncher.py)
    "mcp.server.apps",
    "mcp.server.mcpserver",
    "mcp.server.stdio",
    "mcp.server.streamable_http_manager",
    "hypercorn.trio",
    "openai_mcp_extensions",
    # Imported only once running, so every child paid for them after its fork (found by listing
    # the modules each forked child added): anyio's Trio backend (loaded at the SDK's first
    # anyio call), the SDK servers' logging handler (rich), the codecs of host names and of
    # files read with `utf-8-sig`.
    "anyio._backends._trio",
    "rich.console",
    "rich.logging",
    "encodings.idna",
    "encodings.utf_8_sig",
)
_MESSAGE = 1 << 20  # an environment of a few kB, a command line: far below this


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether to fork this `mcpapps`: yes, unless turned off, or unless `env` sets what an
    interpreter reads only when it starts (`PYTHON*`, the locale) differently from the fork
    server's: that command must start from scratch to see it."""
    if os.environ.get("MCPAPPS_TESTS_FORK", "1") == "0":
        return False
    return env is None or same_at_start(env, _server_environment())


_AT_START = ("PYTHON", "LC_", "LANG")


def same_at_start(env: Mapping[str, str], other: Mapping[str, str]) -> bool:
    """Whether two environments set alike what an interpreter reads only as it starts."""
    return all(
        env.get(key) == other.get(key) for key in {*env, *other} if key.startswith(_AT_START)
    )


# The server side ------------------------------------------------------------------------


def _serve(address: str) -> dict[str, Any]:
    """Fork one child per request until standard input closes (the test worker ended). Returns
    only in a child, with its request."""
    for name in PRELOAD:
        __import__(name)
    # A fork copies only the thread that forks: nothing imported may have started another.
    assert threading.active_count() == 1, threading.enumerate()
    # What is imported now is never collected: the children's collections then leave its
    # pages alone, and they stay shared.
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    poller.register(sys.stdin.fileno(), select.POLLIN)
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd: (pid, the asker's connection)
    launchers: dict[int, int] = {}  # a launcher's connection: its app's pidfd
    scripts: dict[tuple[str, int, int], types.CodeType] = {}  # (path, mtime, size): compiled
    while True:
        # One poll can report a child's end and its launcher's connection hanging up: the
        # first closes that connection, so the second names a closed descriptor (or, reused,
        # another one). Events for a descriptor closed in this round are skipped.
        closed: set[int] = set()
        for fd, _ in poller.poll():
            if fd in closed:
                continue
            if fd == listener.fileno():
                connection, _ = listener.accept()
                data, fds, _, _ = socket.recv_fds(connection, _MESSAGE, 3)
                request = json.loads(data)
                # An app is forked only if a fresh interpreter would start as this one did.
                if request.get("kind") == "python" and not same_at_start(
                    request["env"], os.environ
                ):
                    with contextlib.suppress(OSError):
                        connection.send(json.dumps({"refused": "environment"}).encode())
                    connection.close()
                    for received in fds:
                        os.close(received)
                    continue
                if request.get("kind") == "python":
                    request["code"] = _script_code(request["cwd"], request["argv"][0], scripts)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for pidfd, (_, other) in children.items():
                        os.close(pidfd)
                        other.close()
                    connection.close()
                    request["fds"] = fds
                    return request
                for received in fds:
                    os.close(received)
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (pid, connection)
                poller.register(pidfd, select.POLLIN)
                with contextlib.suppress(OSError):
                    connection.send(json.dumps({"pid": pid}).encode())
                if request.get("kind") == "python":
                    launchers[connection.fileno()] = pidfd
                    poller.register(connection, select.POLLIN)
            elif fd in children:
                pid, connection = children.pop(fd)
                poller.unregister(fd)
                os.close(fd)
                code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                if launchers.pop(connection.fileno(), None) is not None:
                    poller.unregister(connection)
                with contextlib.suppress(OSError):
                    connection.send(json.dumps({"status": code}).encode())
                closed.update((fd, connection.fileno()))
                connection.close()
            elif fd in launchers:  # the launcher is gone (killed): so must be its app
                poller.unregister(fd)
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(launchers.pop(fd), signal.SIGKILL)
            else:  # standard input: the worker is gone; so must be what it left running
                if os.read(fd, 4096):
                    continue
                for pidfd, (pid, _) in children.items():
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    os.waitpid(pid, 0)
                raise SystemExit(0)


def _script_code(
    cwd: str, script: str, scripts: dict[tuple[str, int, int], types.CodeType]
) -> types.CodeType | None:
    """The app's script compiled, once per version of the file: a script run as `__main__`
    has no bytecode cache, and compiling the tests' apps took 3 to 8 ms in each of the ~570
    forked a run. None when it cannot be read or compiled: the child then runs it as the
    interpreter would, and fails as it would."""
    path = os.path.join(cwd, script)
    try:
        stat = os.stat(path)
        key = (os.path.realpath(path), stat.st_mtime_ns, stat.st_size)
        if key not in scripts:
            with open(path, "rb") as source:
                scripts[key] = compile(source.read(), path, "exec", dont_inherit=True)
        return scripts[key]
    except (OSError, SyntaxError, ValueError):
        return None


def _run_script(code: types.CodeType | None) -> None:
    """`python3 script.py ...`: the script as `__main__`, in a module of its own (as
    `runpy.run_path` runs it, not in the fork server's), named by its absolute path (as the
    interpreter names it)."""
    path = os.path.join(os.getcwd(), sys.argv[0])
    if code is None:
        runpy.run_path(path, run_name="__main__")
        return
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _become(request: dict[str, Any]) -> None:
    """Turn this fresh child into the command that was asked for."""
    stdin, stdout, stderr = request["fds"]
    for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
        os.dup2(fd, target)
    for fd in set(request["fds"]):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    # `ps` and the like name it by what it runs, not by the fork server (15 bytes at most).
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(os.path.basename(sys.argv[0])[:15])
    if request.get("kind") == "python":  # `python3 script.py ...`: what the interpreter does
        sys.path[0] = os.path.dirname(os.path.realpath(sys.argv[0]))
    else:
        sys.path[0] = str(Path(MCPAPPS).parent)


def _main() -> None:
    request = _serve(sys.argv[1])
    try:
        _become(request)
    except BaseException as error:  # never back into the server's loop
        print(f"fork server: cannot start {request['argv']}: {error!r}", file=sys.stderr)
        os._exit(127)
    try:
        if request.get("kind") == "python":
            _run_script(request["code"])
            status = 0
        else:
            from supervisor.process.cli import main

            status = main() or 0
    except SystemExit as exit:
        if exit.code is not None and not isinstance(exit.code, int):
            raise  # a message: the interpreter prints it, and ends as it would
        status = exit.code or 0
    _leave(status)


def _leave(status: int) -> None:
    """End as the interpreter ends a program that returned or called `sys.exit(status)`, less
    its teardown of every object: the non-daemon threads joined, the `atexit` functions run
    (among them `logging.shutdown`), the standard streams flushed. In a forked child that
    teardown touched every page of the fork server's imports, so that each was copied: 75 to
    90 ms of CPU per child against 7 (about 900 children a run). A program ended by an
    exception ends through the interpreter, which reports it."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status & 0xFF)


# The test side --------------------------------------------------------------------------


class _Server:
    """This worker's fork server, started at its first use."""

    def __init__(self) -> None:
        self.address = str(_folder() / "fork.sock")
        with contextlib.suppress(FileNotFoundError):  # a fork server before this one
            os.unlink(self.address)
        root = Path(__file__).parents[2]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forkserver", self.address],
            cwd=root,
            env=_server_environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        assert ready == b"ready\n", f"the fork server did not start ({ready!r})"
        atexit.register(self.close)

    def close(self) -> None:
        """Close its standard input (it ends what is still running, and exits) and wait for it,
        so its CPU is counted as the worker's."""
        assert self.process.stdin is not None
        if self.process.stdin.closed:
            return
        self.process.stdin.close()
        self.process.wait(60)

    def launch(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], fds: Sequence[int]
    ) -> tuple[socket.socket, int]:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        connection.connect(self.address)
        request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env)}
        socket.send_fds(connection, [json.dumps(request).encode()], list(fds))
        connection.settimeout(60)
        answer = json.loads(connection.recv(_MESSAGE))
        return connection, answer["pid"]


def _server_environment() -> dict[str, str]:
    """The worker's environment, as `mcpapps` gets it: what the interpreter reads when it starts
    (locale, hash seed, flags) is the fork server's and so every child's."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")}


_server: _Server | None = None
_made: Path | None = None


def _folder() -> Path:
    """This worker's folder for its fork server's socket and the launchers that reach it: one
    for the worker's life, so a launcher named in a manifest stays valid if a fork server has
    to be started again."""
    global _made
    if _made is None:
        _made = Path(tempfile.mkdtemp(prefix="mcpapps-fork-"))
        bin_ = _made / "bin"
        bin_.mkdir()
        launcher = Path(__file__).with_name("forklauncher.py").read_text()
        call = f"main({sys.executable!r}, {str(_made / 'fork.sock')!r})\n"
        for name in ("python3", "python"):
            (bin_ / name).write_text(f"#!{sys.executable} -SE\n{launcher}\n{call}")
            (bin_ / name).chmod(0o755)
    return _made


def _the_server() -> _Server:
    global _server
    if _server is None or _server.process.poll() is not None:
        _server = _Server()
    return _server


def python() -> str:
    """The `python3` the tests start apps with: the launcher to this worker's fork server
    (tests/support/forklauncher.py), or this interpreter when forking is off."""
    if not enabled():
        return sys.executable
    _the_server()
    return str(_folder() / "bin" / "python3")


def stop() -> None:
    """End this worker's fork server, if it has one (the end of the test session)."""
    global _server, _made
    if _server is not None:
        _server.close()
        _server = None
    if _made is not None:
        shutil.rmtree(_made, ignore_errors=True)
        _made = None


class ForkedProcess:
    """An `mcpapps` forked for a test: what the tests use of `subprocess.Popen` (`poll`,
    `wait(timeout)`) and of `trio.Process` (`await wait_exit()`), and signals by pidfd, which
    cannot reach another process that was later given the same pid."""

    def __init__(self, connection: socket.socket, pid: int) -> None:
        self._connection = connection
        self.pid = pid
        self._status: int | None = None
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # already ended; its status is on the way
            self._pidfd = None

    def _take(self, message: bytes) -> None:
        if not message:
            raise AssertionError(f"the fork server went away before mcpapps {self.pid} ended")
        self._status = json.loads(message)["status"]
        self._connection.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        if self._status is None:
            self._connection.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                self._take(self._connection.recv(_MESSAGE))
        return self._status

    def wait(self, timeout: float | None = None) -> int:
        if self._status is None:
            self._connection.settimeout(timeout)
            try:
                self._take(self._connection.recv(_MESSAGE))
            except TimeoutError:
                raise subprocess.TimeoutExpired(MCPAPPS, timeout or 0) from None
        assert self._status is not None
        return self._status

    async def wait_exit(self) -> int:
        import trio

        while self.poll() is None:
            await trio.lowlevel.wait_readable(self._connection)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None and self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_mcpapps(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
) -> ForkedProcess:
    """`mcpapps *args`, forked: standard input is /dev/null, standard output and error go to
    the given files or descriptors (/dev/null when None)."""
    with open(os.devnull, "rb+") as null:
        fds = [null.fileno(), _fd(stdout, null), _fd(stderr, null)]
        connection, pid = _the_server().launch([MCPAPPS, *args], cwd, env, fds)
    return ForkedProcess(connection, pid)


def start_mcpapps(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], stderr: int | IO[Any]
) -> subprocess.Popen[bytes] | ForkedProcess:
    """`mcpapps *args` in the background, standard output to /dev/null: forked when it can be,
    else started as a user starts it."""
    if enabled(env):
        return fork_mcpapps(args, cwd=cwd, env=env, stderr=stderr)
    return subprocess.Popen(
        [MCPAPPS, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=stderr
    )


def run_mcpapps(
    args: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([mcpapps, *args], capture_output=True, text=True, timeout=...)`, forked."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = fork_mcpapps(args, cwd=cwd, env=env, stdout=out, stderr=err)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        texts = []
        for file in (out, err):
            file.seek(0)
            data = file.read().decode(locale.getpreferredencoding(False))
            texts.append(data.replace("\r\n", "\n").replace("\r", "\n"))
    return subprocess.CompletedProcess([MCPAPPS, *args], code, texts[0], texts[1])


def _fd(target: int | IO[Any] | None, null: IO[Any]) -> int:
    if target is None or target == subprocess.DEVNULL:
        return null.fileno()
    return target if isinstance(target, int) else target.fileno()


if __name__ == "__main__":
    _main()
