"""The fork server the tests start `mcpapps` from (tests/support/forkserver.py) gives the
command what a fresh start would: its arguments, folder, environment and streams, and the test
gets its exit status, or the signal that ended it."""

from __future__ import annotations

import signal

import pytest

from supervisor import __version__
from tests.support import forkserver
from tests.support.helpers import Project, free_port_pair, run_mcpapps
from tests.support.running import environment


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
