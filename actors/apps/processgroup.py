"""A child process in its own process group, with a parent-death signal and a stop ladder.

Why not `trio.open_process` or the SDK's `stdio_client`: both fork from a worker thread, and on
Linux the parent-death signal fires when the *thread* that forked the child exits — Trio's idle
worker threads exit after ten seconds, which would kill healthy apps. So the fork happens here on
the Trio thread (it takes a few milliseconds), and the pipes become Trio streams.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

import trio

from supervisor.model.errors import McpappsError

logger = logging.getLogger("mcpapps.process")

STDIN_CLOSE_GRACE_S = 2.0  # close stdin, then wait this long before SIGTERM
KILL_REAP_S = 2.0  # after SIGKILL, only an unkillable (D-state) process makes us wait this long
_POLL_S = 0.05

_PR_SET_PDEATHSIG = 1
_libc = (
    ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None
)


def _in_child() -> None:
    """Runs between fork and exec: die with the supervisor, whichever way it dies."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def live_group_members(pgid: int) -> list[int]:
    """The processes of group `pgid` that are not zombies. Zombies count as members for
    `killpg`, but an orphan's zombie waits for init to reap it (which some container inits never
    do) and can no longer run anything, so it must not hold up a stop."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields start after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            members.append(int(entry.name))
    return members


class SpawnError(McpappsError):
    """The command could not be started (not found, not executable, bad working directory)."""


def spawn_error_text(command: str, cwd: str | None, error: OSError) -> str:
    name = errno.errorcode.get(error.errno or 0, "")
    why = f"{error.strerror or error}" + (f" ({name})" if name else "")
    if isinstance(error, FileNotFoundError) and cwd and not os.path.isdir(cwd):
        return f"cannot start '{command}': the working directory {cwd} does not exist"
    return f"cannot start '{command}': {why}"


def describe_returncode(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


class ChildProcess:
    """One spawned child: its pipes as Trio streams, its exit, and a stop ladder that always
    reaps it and clears its process group."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: trio.lowlevel.FdStream,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self._popen = popen
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pid = popen.pid
        self.exited = trio.Event()

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None,
    ) -> ChildProcess:
        pipes = [os.pipe() for _ in range(3)]
        (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes
        try:
            popen = subprocess.Popen(
                list(argv),
                stdin=in_r,
                stdout=out_w,
                stderr=err_w,
                env=dict(env),
                cwd=cwd,
                start_new_session=True,  # its own session and process group: killpg reaches all
                preexec_fn=_in_child,  # only a prctl call: safe between fork and exec
                close_fds=True,
            )
        except OSError as error:
            for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
                os.close(fd)
            raise SpawnError(spawn_error_text(argv[0], cwd, error)) from error
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        return cls(
            popen,
            trio.lowlevel.FdStream(in_w),
            trio.lowlevel.FdStream(out_r),
            trio.lowlevel.FdStream(err_r),
        )

    def poll(self) -> int | None:
        """The exit status if the child has exited (reaping it), else None."""
        return self._popen.poll()

    async def wait(self) -> int:
        """Wait for the child to exit (and reap it); sets `exited`."""
        pidfd = None
        with contextlib.suppress(OSError, AttributeError):
            pidfd = os.pidfd_open(self.pid)
        try:
            while self._popen.poll() is None:
                if pidfd is not None:
                    await trio.lowlevel.wait_readable(pidfd)
                else:
                    await trio.sleep(_POLL_S)
        finally:
            if pidfd is not None:
                os.close(pidfd)
        self.exited.set()
        return self._popen.returncode

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return sys.platform != "linux" or any(live_group_members(self.pid))

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def _wait_group(self, timeout: float) -> bool:
        """Wait until the leader is reaped and nothing is left in its group."""
        with trio.move_on_after(timeout):
            while self._popen.poll() is None or self._group_alive():
                await trio.sleep(_POLL_S)
            self.exited.set()
            return True
        return False

    def leader_exited(self) -> bool:
        """Whether the child itself has exited (reaping it); what it started may live on."""
        return self._popen.poll() is not None

    def group_alive(self) -> bool:
        """Whether anything of the child's process group lives (the child itself reaped)."""
        return self._popen.poll() is None or self._group_alive()

    async def stop(self, grace_s: float) -> None:
        """The stop ladder: close stdin → wait 2 s → SIGTERM the group → wait `grace_s` →
        SIGKILL the group. Shielded: a cancelled caller must not leave a process behind.
        When the child has exited already, what it left in its group never reads our stdin:
        the ladder starts at SIGTERM."""
        with trio.CancelScope(shield=True):
            with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                await self.stdin.aclose()
            if not self.leader_exited() and await self._wait_group(STDIN_CLOSE_GRACE_S):
                return
            if not self.group_alive():
                self.exited.set()
                return
            self._signal_group(signal.SIGTERM)
            if await self._wait_group(grace_s):
                return
            logger.warning("process group %d did not stop after SIGTERM: sending SIGKILL", self.pid)
            self._signal_group(signal.SIGKILL)
            if not await self._wait_group(KILL_REAP_S):
                logger.error("process group %d survived SIGKILL; giving up on it", self.pid)

    async def close_pipes(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            with contextlib.suppress(trio.ClosedResourceError, OSError):
                await stream.aclose()
