"""What the round-3 benchmarks (bench/httpapps.py, idle.py, manyapps.py, chatturns.py) share: a
real `mcpapps run` in a temp project, its CPU and memory from /proc, free loopback ports. Nothing
here comes from `tests/` (the benchmarks stand alone); `bench/proxy.py` has the older copy."""

from __future__ import annotations

import collections
import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
GROCERY = ROOT / "mcpapps" / "grocery-inventory"
TOKEN = "bench-token"
GUARD_S = 120  # a hang guard for starting and stopping processes, not a speed claim
STOP_GRACE_S = 15
RUNNING = re.compile(r"app (\S+): \S+ → Running")


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


def free_port_pair() -> int:
    """A loopback port P with P + 1 free too (the supervisor's sandbox listener takes P + 1),
    below the ephemeral range so no outgoing connection is handed P + 1 meanwhile."""
    while True:
        port = random.randrange(20000, 32000)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment() -> dict[str, str]:
    """Ours, with this interpreter first on PATH (so `python3` in a manifest has the SDK)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


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
