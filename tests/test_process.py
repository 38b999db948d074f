"""The child process on its own: the parent-death signal, without the reaper's help."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from actors.apps.processgroup import ChildProcess, SpawnError
from tests.support.running import GUARD_S, alive, wait_gone

# A parent that spawns a child the way the app actor does (on the Trio thread), prints the
# child's pid, and waits to be killed. The reaper is not involved.
PARENT = textwrap.dedent(
    """
    import sys, time, trio
    from actors.apps.processgroup import ChildProcess

    async def main():
        child = ChildProcess.spawn(["sleep", "600"], env={"PATH": "/usr/bin:/bin"}, cwd=None)
        print(child.pid, flush=True)
        await trio.sleep_forever()

    trio.run(main)
    """
)


async def test_the_app_process_dies_with_its_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, cwd="."
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()
        parent.wait(timeout=GUARD_S)
        await wait_gone(child)
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.parametrize(
    ("argv", "cwd", "expected"),
    [
        (
            ["/nonexistent/x"],
            None,
            "cannot start '/nonexistent/x': No such file or directory (ENOENT)",
        ),
        (
            ["true"],
            "/nonexistent-dir",
            "cannot start 'true': the working directory /nonexistent-dir does not exist",
        ),
        (["./plain.txt"], ".", "cannot start './plain.txt': Permission denied (EACCES)"),
    ],
)
def test_spawn_errors_are_sentences(
    argv: list[str], cwd: str | None, expected: str, tmp_path: Path
) -> None:
    (tmp_path / "plain.txt").write_text("not a program\n")  # not executable
    folder = str(tmp_path) if cwd == "." else cwd
    with pytest.raises(SpawnError) as caught:
        ChildProcess.spawn(argv, env={"PATH": "/usr/bin:/bin"}, cwd=folder)
    assert str(caught.value) == expected
