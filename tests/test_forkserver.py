"""The fork server the tests start `mcpapps` from (tests/support/forkserver.py) gives the
command what a fresh start would: its arguments, folder, environment and streams, and the test
gets its exit status, or the signal that ended it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from supervisor import __version__
from tests.support import forkserver
from tests.support.helpers import Project, free_port_pair, run_mcpapps
from tests.support.running import alive, environment


def test_a_forked_command_gets_its_arguments_folder_environment_and_streams(
    project: Project,
) -> None:
    (project.root / "other.toml").write_text('[apps]\ndiscovery_paths = ["nowhere"]\n')
    env = {**environment(), "MCPAPPS_CONFIG": "other.toml"}  # relative: to the working folder
    result = forkserver.run_mcpapps(["validate"], cwd=project.root, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"config: {project.root / 'other.toml'}\n")
    assert "nowhere: discovery path does not exist" in result.stdout
    version = forkserver.run_mcpapps(["--version"], cwd=project.root, env=env, timeout=60)
    assert (version.returncode, version.stdout) == (0, f"mcpapps {__version__}\n")


def test_the_exit_status_and_the_signal_that_ended_it_come_back(project: Project) -> None:
    project.config('[server]\nport = "x"\n')
    failed = run_mcpapps("run", cwd=project.root)
    assert failed.returncode == 1
    assert "server.port" in failed.stderr
    project.config("")
    env = {**environment(), "MCPAPPS_PORT": str(free_port_pair())}
    with (project.root / "log").open("wb") as stderr:
        process = forkserver.fork_mcpapps(["run"], cwd=project.root, env=env, stderr=stderr)
    process.send_signal(signal.SIGKILL)
    assert process.wait(60) == -signal.SIGKILL
    assert process.poll() == process.returncode == -signal.SIGKILL


def test_an_environment_the_interpreter_reads_at_start_is_not_forked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MCPAPPS_TESTS_FORK", raising=False)
    ours = environment()
    assert forkserver.enabled(ours)
    assert forkserver.enabled({**ours, "CHAT_DATABASE_URL": "postgresql://x"})
    assert not forkserver.enabled({**ours, "PYTHONIOENCODING": "latin-1"})
    other_locale = "C" if ours.get("LC_ALL") != "C" else "C.UTF-8"
    assert not forkserver.enabled({**ours, "LC_ALL": other_locale})
    monkeypatch.setenv("MCPAPPS_TESTS_FORK", "0")
    assert not forkserver.enabled(ours)


# The `python3` the tests start their Python apps with (tests/support/forklauncher.py) -------

PROBE = """\
import json, os, sys, time
print(json.dumps({"pid": os.getpid(), "argv": sys.argv, "cwd": os.getcwd(),
    "env": os.environ.get("PROBE"), "path0": sys.path[0], "line": sys.stdin.readline()}),
    flush=True)
print("to stderr", file=sys.stderr, flush=True)
if sys.argv[1] == "exit":
    sys.exit(int(sys.argv[2]))
time.sleep(60)
"""


def start_probe(project: Project, *args: str, **env: str) -> tuple[subprocess.Popen[bytes], Any]:
    script = project.root / "apps" / "probe.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(PROBE)
    process = subprocess.Popen(
        [forkserver.python(), "apps/probe.py", *args],
        cwd=project.root,
        env={**os.environ, "PROBE": "here", **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(b"a line\n")
    process.stdin.flush()
    return process, json.loads(process.stdout.readline())


def test_a_forked_app_gets_its_arguments_folder_environment_streams_and_exit_status(
    project: Project,
) -> None:
    process, seen = start_probe(project, "exit", "3")
    assert seen["pid"] != process.pid  # forked, not started by the launcher
    assert seen["argv"] == ["apps/probe.py", "exit", "3"]
    assert (seen["cwd"], seen["env"], seen["line"]) == (str(project.root), "here", "a line\n")
    assert seen["path0"] == str(project.root / "apps")
    assert process.wait(60) == 3
    assert process.stderr is not None
    assert process.stderr.read() == b"to stderr\n"


def test_signals_reach_the_forked_app_and_its_end_comes_back(project: Project) -> None:
    process, seen = start_probe(project, "wait")
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == -signal.SIGTERM
    assert not alive(seen["pid"])


def test_a_killed_launcher_takes_its_app_with_it(project: Project) -> None:
    process, seen = start_probe(project, "wait")
    process.kill()
    assert process.wait(60) == -signal.SIGKILL
    deadline = time.monotonic() + 60  # a hang guard: the fork server kills it as it notices
    while alive(seen["pid"]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(seen["pid"])


def test_what_cannot_be_forked_starts_the_interpreter_itself(project: Project) -> None:
    process, seen = start_probe(project, "exit", "0", PYTHONIOENCODING="latin-1")
    assert seen["pid"] == process.pid
    assert process.wait(60) == 0
    flag = subprocess.run(
        [forkserver.python(), "-c", "import sys; print(sys.flags.no_site)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert flag.stdout == "0\n"  # the real interpreter, with its site-packages


SCRIPT = """\
import dataclasses, json, os, sys

@dataclasses.dataclass
class Seen:
    name: str
    file: str
    version: str

print(json.dumps({"pid": os.getpid(), **dataclasses.asdict(Seen(__name__, __file__, "{v}"))}))
"""


def run_script(project: Project, python: str) -> tuple[int, dict[str, Any] | None, str]:
    done = subprocess.run(
        [python, "apps/script.py"], cwd=project.root, capture_output=True, text=True, timeout=60
    )
    seen = json.loads(done.stdout) if done.stdout else None
    return done.returncode, seen, done.stderr.strip().splitlines()[-1] if done.stderr else ""


def test_a_forked_script_runs_as_the_interpreter_runs_it_each_version_as_written(
    project: Project,
) -> None:
    """The fork server compiles each version of a script once (tests/support/forkserver.py)."""
    script = project.root / "apps" / "script.py"
    script.parent.mkdir(exist_ok=True)
    for version in ("1", "2.0"):  # a new version: a new size
        script.write_text(SCRIPT.replace("{v}", version))
        status, forked, _ = run_script(project, forkserver.python())
        real_status, real, _ = run_script(project, sys.executable)
        assert forked is not None, "the forked script printed nothing"
        assert real is not None
        del forked["pid"], real["pid"]
        assert (status, forked) == (real_status, real)
        file = str(project.root / "apps" / "script.py")
        assert real == {"name": "__main__", "file": file, "version": version}
    script.write_text("def broken(:\n")
    forked_failure = run_script(project, forkserver.python())
    assert forked_failure == run_script(project, sys.executable)
    assert forked_failure[0] == 1
    assert forked_failure[2].startswith("SyntaxError")


ENDINGS = """\
import atexit, sys, threading, time

atexit.register(print, "at exit")  # printed to a pipe: buffered until the end
late = threading.Thread(target=lambda: (time.sleep(0.2), print("late thread")))
late.start()
print("printed")
how = sys.argv[1]
if how == "status":
    sys.exit(5)
if how == "message":
    sys.exit("a message")
if how == "raise":
    raise RuntimeError("raised")
"""


@pytest.mark.parametrize("how", ["returns", "status", "message", "raise"])
def test_a_forked_script_ends_as_the_interpreter_ends_it(project: Project, how: str) -> None:
    """The fork server's child ends without the interpreter's teardown of every object, but
    with what a program sees of its end: the non-daemon threads waited for, the `atexit`
    functions run, what was printed flushed, the exit status; an exception or a message ends
    it through the interpreter."""
    script = project.root / "apps" / "endings.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(ENDINGS)
    ends = []
    for python in (forkserver.python(), sys.executable):
        done = subprocess.run(
            [python, "apps/endings.py", how],
            cwd=project.root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        last = done.stderr.strip().splitlines()[-1:]
        ends.append((done.returncode, done.stdout, last))
    assert ends[0] == ends[1]
    assert ends[1][1] == "printed\nlate thread\nat exit\n"
