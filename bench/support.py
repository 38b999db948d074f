"""What the benchmarks share: free loopback ports, a temp project of manifests, the fixture app,
a registry or a whole `mcpapps run` on it, and a throwaway PostgreSQL server.

Its own, not the tests' helpers (tests/support): a benchmark is a user of the product, and a
change to the tests' helpers must not change what a benchmark measures. Nothing here imports
from tests/; the fixture app is only a file the benchmarks run (tests/apps/fixture_app.py).
Run a benchmark from the project's root (`python bench/<name>.py`): each puts the root on
`sys.path` so that `bench.support` and the product's packages import."""

from __future__ import annotations

import collections
import contextlib
import glob
import json
import os
import pwd
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import trio

from actors.messages import StopAll
from actors.registry import Registry
from actors.runtime import ask
from supervisor.model.config import config_from_data
from supervisor.model.discovery import discover

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_APP = ROOT / "tests" / "apps" / "fixture_app.py"  # a file run, never imported
GROCERY = ROOT / "mcpapps" / "grocery-inventory"
MANIFEST = "openclaw.mcpapp.json"
GUARD_S = 120  # a hang guard for starting and stopping, not a speed claim

# The round-3 benchmarks (httpapps, idle, manyapps, chatturns): their supervisor's token, its
# stop grace, and the log line of an app that came Running.
TOKEN = "bench-token"
STOP_GRACE_S = 15
RUNNING = re.compile(r"app (\S+): \S+ → Running")
# Fast supervision: short backoff and pings, so that restarts happen in a benchmark's time.
FAST = {
    "backoff_initial_s": 0.05,
    "backoff_max_s": 0.2,
    "ping_interval_s": 0.5,
    "ping_timeout_s": 0.5,
    "ping_misses": 2,
    "stop_grace_s": 1.0,
}


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair() -> int:
    """A loopback port P such that P and P + 1 are both free now: a supervisor's main port,
    whose sandbox listener takes the next one by default. Chosen below the kernel's ephemeral
    range, so that no `free_port()` or outgoing connection is handed P + 1 meanwhile."""
    while True:
        port = random.randrange(20000, 32000)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


async def wait_for_port(port: int, process: Any = None, timeout: float = GUARD_S) -> None:
    """Until something accepts connections on the loopback port; fails at once if `process`
    (a trio.Process) exits meanwhile."""
    with trio.fail_after(timeout):
        while True:
            if process is not None and process.returncode is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.05)
                continue
            await stream.aclose()
            return


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def environment() -> dict[str, str]:
    """The supervisor's environment: ours, with this interpreter first on PATH (so `python3`
    in a manifest has the SDK)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


class Project:
    """A folder with a config.toml and manifests under it, as a user would lay them out."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_path = root / "config.toml"
        self.config_path.write_text("")

    def manifest(self, folder: str, content: dict[str, Any]) -> Path:
        path = self.root / folder / MANIFEST
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))
        return path

    def config(self, text: str) -> Path:
        self.config_path.write_text(text)
        return self.config_path


def fixture_manifest(app_id: str, *options: str, **fields: Any) -> dict[str, Any]:
    """The manifest of one copy of the fixture app, its tools named `<app_id>.<tool>`."""
    return {
        "id": app_id,
        "command": sys.executable,
        "arguments": [str(FIXTURE_APP), "--name", app_id, *options],
        "toolNamePrefix": f"{app_id}.",
        **fields,
    }


def write(
    project: Project, server: str = "", *apps: tuple[str, tuple[str, ...]], extra: str = ""
) -> None:
    """A config.toml with the fixture apps given, `server` settings and `extra` TOML tables."""
    for app_id, options in apps:
        project.manifest(f"apps/{app_id}", fixture_manifest(app_id, *options))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    apps_section = '[apps]\ndiscovery_paths = ["./apps"]\n'
    project.config(f"[server]\n{server}\n{apps_section}\n[supervision]\n{supervision}\n{extra}\n")


@contextlib.asynccontextmanager
async def running(
    project: Project, data: Mapping[str, Any], environ: Mapping[str, str]
) -> AsyncIterator[Registry]:
    """A registry running every app of `project` (manifests under `apps/`), stopped after."""
    env = dict(environ)
    config = config_from_data(dict(data), project.config_path, env)
    registry = Registry(discover(config, env).apps, environ=env)
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        try:
            yield registry
        finally:
            with trio.CancelScope(shield=True), trio.fail_after(GUARD_S):
                await ask(registry.mailbox, StopAll)
            nursery.cancel_scope.cancel()


class Supervisor:
    """`mcpapps run` in a subprocess; its stderr (the log) is read as it comes."""

    def __init__(self, project: Project, extra_env: dict[str, str] | None = None) -> None:
        self.project = project
        self.extra_env = extra_env or {}
        self.log = ""
        self.log_ended = False  # stderr is closed: the process is gone
        self.process: trio.Process | None = None
        self.port = int(self.extra_env.get("MCPAPPS_PORT") or free_port_pair())

    async def start(self, nursery: trio.Nursery) -> None:
        command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"]
        self.process = await trio.lowlevel.open_process(
            command,
            cwd=self.project.root,
            env={**environment(), "MCPAPPS_PORT": str(self.port), **self.extra_env},
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        nursery.start_soon(self._read)

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self.log += chunk.decode()
        self.log_ended = True

    async def wait_for_log(self, text: str) -> None:
        with trio.fail_after(GUARD_S):
            while text not in self.log:
                if self.log_ended:
                    raise RuntimeError(f"mcpapps ended without logging {text!r}:\n{self.log}")
                await trio.sleep(0.02)

    async def stop(self, signum: signal.Signals = signal.SIGTERM) -> int:
        """Send `signum` and wait for the exit status."""
        assert self.process is not None
        self.process.send_signal(signum)
        with trio.fail_after(GUARD_S):
            return await self.process.wait()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextlib.asynccontextmanager
async def supervisor_running(
    project: Project, extra_env: dict[str, str] | None = None
) -> AsyncIterator[Supervisor]:
    """`mcpapps run` on the project, serving on a free port; stopped with SIGTERM after."""
    supervisor = Supervisor(project, extra_env=extra_env)
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        try:
            await supervisor.wait_for_log("ready: ")
            await supervisor.wait_for_log("front door listening on")
            yield supervisor
        finally:
            assert supervisor.process is not None
            if supervisor.process.returncode is None:
                with trio.CancelScope(shield=True):
                    await supervisor.stop()


PG_PASSWORD = "s3cret-pw-for-bench"
PG_INSTALL = "apt-get install -y postgresql (make test does it when run as root)"


class PostgresServer:
    """Debian's PostgreSQL, `initdb` into a temp folder and `pg_ctl` on a free loopback port,
    password login only. As root the server runs as the `postgres` user: initdb refuses root."""

    def __init__(self, folder: Path, port: int, as_user: list[str], bin_dir: Path) -> None:
        self.folder = folder
        self.port = port
        self._as_user = as_user
        self._bin = bin_dir

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres:{PG_PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A database of its own for one run: its URL."""
        name = f"b_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as_user, str(self._bin / command[0]), *command[1:]],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=self.folder,
        )

    def start(self) -> None:
        data = self.folder / "data"
        password_file = self.folder / "password"
        password_file.write_text(PG_PASSWORD)
        self._run(
            "initdb", "-D", str(data), "-U", "postgres", "--auth=scram-sha-256",
            f"--pwfile={password_file}", "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1"
            f" -c unix_socket_directories={self.folder} -c fsync=off -c max_connections=200"
        )
        log = str(self.folder / "log")
        self._run("pg_ctl", "-D", str(data), "-o", options, "-w", "-l", log, "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise SystemExit(f"PostgreSQL is not installed, and this benchmark needs it: {PG_INSTALL}")
    folder = Path(tempfile.mkdtemp(prefix="mcpapps-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        folder.chmod(0o700)
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PostgresServer(folder, free_port(), as_user, Path(found[-1]).parent)
    try:
        server.start()
    except subprocess.CalledProcessError as error:
        log = folder / "log"
        tail = log.read_text()[-2000:] if log.exists() else ""
        raise SystemExit(f"PostgreSQL did not start: {error.stderr.decode()}{tail}") from error
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def cpu_s(pid: int | None) -> float:
    """User + system CPU a live process has used so far (fields 14 and 15 of /proc/<pid>/stat)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_kib(pid: int | str, field: str, file: str = "status") -> int:
    """A `Field:   123 kB` line of /proc/<pid>/<file>, in KiB (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/{file}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """The direct children of a process (the supervisor's apps)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


class Child:
    """A process a benchmark starts: its stderr kept (the last lines, and every app that came
    Running), stopped with SIGTERM, then SIGKILL if it lingers."""

    def __init__(self, name: str, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.name, self.command, self.cwd, self.env = name, command, cwd, env
        self.process: trio.Process | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=400)
        self.running: collections.Counter[str] = collections.Counter()  # app id: times Running
        self._partial = ""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self, nursery: trio.Nursery) -> None:
        self.process = await trio.lowlevel.open_process(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        nursery.start_soon(self._read)

    async def _read(self) -> None:
        assert self.process is not None
        assert self.process.stderr is not None
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            async for chunk in self.process.stderr:
                text = self._partial + chunk.decode(errors="replace")
                *complete, self._partial = text.split("\n")
                self.tail.extend(complete)
                for line in complete:
                    if (found := RUNNING.search(line)) is not None:
                        self.running[found.group(1)] += 1

    def log(self) -> str:
        return "\n".join([*self.tail, self._partial])

    def check_running(self) -> None:
        assert self.process is not None
        if self.process.returncode is not None:
            raise RuntimeError(
                f"{self.name} exited with status {self.process.returncode}:\n{self.log()}"
            )

    async def wait_for_log(self, pattern: str) -> re.Match[str]:
        with trio.fail_after(GUARD_S):
            while True:
                if (found := re.search(pattern, self.log())) is not None:
                    return found
                self.check_running()
                await trio.sleep(0.02)

    async def wait_for_port(self, port: int) -> None:
        with trio.fail_after(GUARD_S):
            while True:
                self.check_running()
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                except OSError:
                    await trio.sleep(0.05)
                    continue
                await stream.aclose()
                return

    async def stop(self) -> None:
        process = self.process
        if process is None or process.returncode is not None:
            return
        with trio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with trio.move_on_after(STOP_GRACE_S):
                await process.wait()
                return
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def bundled_http_app(name: str, app_dir: Path, port: int) -> Child:
    """The bundled app (a copy in `app_dir`) serving Streamable HTTP on `port` (`--http`)."""
    command = [sys.executable, "server.py", "--http", "--port", str(port)]
    return Child(name, command, app_dir, environment())


@contextlib.asynccontextmanager
async def supervisor(
    root: Path,
    config: str,
    nursery: trio.Nursery,
    name: str = "mcpapps run",
    kind: type[Child] = Child,
) -> AsyncIterator[tuple[Child, str]]:
    """`mcpapps run` in `root` (which holds its apps) with `config` (TOML, [server] added), on
    free loopback ports, until it serves: the process (a `kind`) and its base URL."""
    port = free_port_pair()
    (root / "config.toml").write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\ntoken = "{TOKEN}"\n\n{config}'
    )
    command = [str(Path(sys.executable).parent / "mcpapps"), "run", "--config", "config.toml"]
    child = kind(name, command, root, environment())
    await child.start(nursery)
    try:
        await child.wait_for_log(r"front door listening on")
        await child.wait_for_port(port)
        yield child, f"http://127.0.0.1:{port}"
    finally:
        await child.stop()


async def exit_on_signal() -> None:
    """SIGTERM or SIGHUP end a benchmark as Ctrl-C does: through the `finally` blocks that stop
    every process it started. Started in the benchmark's nursery, cancelled with it."""
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")


def admin_headers() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
