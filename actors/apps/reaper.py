"""The reaper: a tiny watchdog process that outlives a killed supervisor just long enough to kill
the process groups of its apps.

The parent-death signal reaches only an app's own process; its children (an `npx` launcher's
`node`, a shell's pipeline) would be orphaned when the supervisor is killed with SIGKILL. So the
supervisor tells the reaper, over a pipe, each app's process group as it starts ("+pgid") and
when it is gone ("-pgid"). When the pipe reaches end of file — the supervisor exited, however it
exited — the reaper kills every group still listed, and exits. A clean shutdown has forgotten
every group by then, so it kills nothing.

Run as `python -I -S <this file>` (standard library only: it must start fast and never fail). The
file is run by its path with neither `site` nor the environment, so the reaper does not pay for
the site-packages' `.pth` files or this package's imports: 25 ms of CPU less than `-m`, once for
each supervisor that starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys


class Reaper:
    """The supervisor's end of the pipe."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__)],
            stdin=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C at a terminal must not reach it before us
            close_fds=True,
        )
        assert self._process.stdin is not None
        self._pipe = self._process.stdin

    def _say(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._pipe.write(line.encode())
            self._pipe.flush()

    def watch(self, pgid: int) -> None:
        self._say(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        self._say(f"-{pgid}\n")

    def close(self) -> None:
        """End the pipe (the reaper kills what is still listed and exits) and reap it."""
        with contextlib.suppress(OSError, ValueError):
            self._pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        text = line.strip().decode("ascii", "replace")
        if len(text) > 1 and text[1:].isdigit():
            (groups.add if text[0] == "+" else groups.discard)(int(text[1:]))
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
