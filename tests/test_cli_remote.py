"""`mcpapps apps|call|start|stop|restart|logs` as a user runs them against a real `mcpapps run`:
a real process each, its output and its exit status."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
import trio

from supervisor.model.address import process_start, remove_address, salvaged
from supervisor.process import remote
from tests.support.helpers import Project, free_port, free_port_pair, run_mcpapps
from tests.support.running import (
    FAST,
    GUARD_S,
    Supervisor,
    alive,
    fixture_manifest,
    supervisor_running,
    wait_gone,
)

TOKEN = "cli-s3cret"


def write(project: Project, *apps: tuple[str, tuple[str, ...]], server: str = "") -> int:
    """A project whose config names its port, as a user's would; returns the port."""
    for app_id, options in apps:
        project.manifest(f"apps/{app_id}", fixture_manifest(app_id, *options))
    port = free_port_pair()  # the sandbox listener takes port + 1
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        f'[server]\nport = {port}\n{server}\n[apps]\ndiscovery_paths = ["./apps"]\n'
        f"[apps.entries.off]\nenabled = false\n[supervision]\n{supervision}\n"
    )
    return port


@contextlib.asynccontextmanager
async def serving(project: Project, port: int, ready: str = "ready: ") -> AsyncIterator[Supervisor]:
    async with supervisor_running(project, {"MCPAPPS_PORT": str(port)}, ready) as supervisor:
        yield supervisor


async def mcpapps(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command in a thread, so that the supervisor's log keeps being read meanwhile."""
    return await trio.to_thread.run_sync(lambda: run_mcpapps(*args, cwd=cwd, env=env))


def rows(stdout: str) -> dict[str, list[str]]:
    """The `apps` table by app id: its cells, split on the column gaps."""
    lines = stdout.splitlines()
    assert lines[0].split() == ["ID", "STATE", "PID", "RESTARTS", "TOOLS", "LAST", "ERROR"]
    table = [re.split(r"\s{2,}", line) for line in lines[1:] if line and not line[0].isdigit()]
    return {cells[0]: cells for cells in table}


async def test_apps_prints_a_table_and_json(project: Project) -> None:
    port = write(project, ("plain", ()), ("broken", ("--crash-at-start",)), ("off", ()))
    project.config(project.config_path.read_text() + "[apps.entries.broken]\nintensity = 0\n")
    async with serving(project, port, ready="gave up after 0 restarts") as supervisor:
        # The apps start side by side: `broken` may give up before `plain` is Running.
        await supervisor.wait_for_log("app plain: Loaded → Running")
        result = await mcpapps("apps", cwd=project.root)  # ./config.toml, as `run` reads it
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        table = rows(result.stdout)
        listed = json.loads((await mcpapps("apps", "--json", cwd=project.root)).stdout)["apps"]
        status = {app["id"]: app for app in listed}

        plain = status["plain"]
        assert table["plain"] == [
            "plain",
            "Running",
            str(plain["pid"]),
            "0",
            str(plain["counts"]["tools"]),
            "-",
        ]
        assert alive(plain["pid"])
        assert table["broken"][:3] == ["broken", "Failed (gave up)", "-"]
        assert table["broken"][-1].startswith("the process exited with code 2")
        assert table["off"] == [
            "off",
            "Disabled",
            "-",
            "0",
            "-",
            "disabled: disabled in config entries",
        ]
        assert result.stdout.splitlines()[-1] == "3 apps: 1 Failed, 1 Disabled, 1 Running"


async def test_call_prints_the_result_and_fails_on_a_tool_error(project: Project) -> None:
    port = write(project, ("plain", ()))
    async with serving(project, port):
        result = await mcpapps("call", "plain.echo", '{"text": "hello"}', cwd=project.root)
        assert (result.returncode, result.stdout, result.stderr) == (0, "hello\n", "")

        result = await mcpapps("call", "plain.fail", cwd=project.root)
        assert result.returncode == 1
        assert result.stdout == ""
        assert result.stderr == "Error: tool 'plain.fail' of app 'plain' failed: fixture failure\n"

        result = await mcpapps("call", "plain.add", '{"a": 1, "b": 2}', "--json", cwd=project.root)
        assert result.returncode == 0
        body = json.loads(result.stdout)
        assert (body["name"], body["app"], body["text"], body["isError"]) == (
            "plain.add",
            "plain",
            "3",
            False,
        )

        result = await mcpapps("call", "plain.nope", "{}", cwd=project.root)
        assert result.returncode == 1
        assert result.stderr == "mcpapps: error: unknown tool 'plain.nope'\n"
        # Asked for JSON, the supervisor's error answer is the output, as an answer would be.
        result = await mcpapps("call", "plain.nope", "{}", "--json", cwd=project.root)
        assert (result.returncode, result.stderr) == (1, "")
        assert json.loads(result.stdout) == {
            "error": {"code": "unknown_tool", "message": "unknown tool 'plain.nope'"}
        }

        # A wrong command line is a usage error, found before anything is sent.
        for bad, why in (
            (
                "{text: 1}",
                "the arguments of `call`: not valid JSON: Expecting property name enclosed"
                " in double quotes at line 1 column 2",
            ),
            ("[1]", "the arguments of `call`: arguments must be a JSON object, got an array"),
        ):
            result = await mcpapps("call", "plain.echo", bad, cwd=project.root)
            assert result.returncode == 2
            assert result.stderr.splitlines()[-1] == f"mcpapps call: error: {why}"


async def test_restart_stop_start_and_logs(project: Project) -> None:
    port = write(project, ("plain", ("--stderr-lines", "2")), ("quiet", ()), ("off", ()))
    async with serving(project, port):
        before = json.loads((await mcpapps("apps", "--json", cwd=project.root)).stdout)
        old_pid = next(a["pid"] for a in before["apps"] if a["id"] == "plain")

        result = await mcpapps("restart", "plain", cwd=project.root)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("plain: Running (pid ")
        new_pid = int(result.stdout.split("pid ")[1].rstrip(")\n"))
        assert new_pid != old_pid
        assert alive(new_pid)
        await wait_gone(old_pid)

        result = await mcpapps("stop", "plain", cwd=project.root)
        assert (result.returncode, result.stdout) == (0, "plain: Stopped\n")
        await wait_gone(new_pid)

        result = await mcpapps("start", "plain", "--json", cwd=project.root)
        assert result.returncode == 0
        started = json.loads(result.stdout)["app"]
        assert started["state"] == "Running"
        assert alive(started["pid"])

        # The tail survives restarts: each of the three processes wrote its two lines.
        result = await mcpapps("logs", "plain", cwd=project.root)
        assert result.returncode == 0
        assert result.stdout.splitlines() == ["fixture stderr line 1", "fixture stderr line 2"] * 3
        detail = json.loads((await mcpapps("logs", "plain", "--json", cwd=project.root)).stdout)
        assert detail["stderr"] == result.stdout.splitlines()
        assert detail["catalog"]["tools"]

        # An app that wrote nothing yet: a note on stderr, nothing on stdout (for scripts).
        result = await mcpapps("logs", "quiet", cwd=project.root)
        assert (result.returncode, result.stdout) == (0, "")
        assert result.stderr == "(no stderr lines yet)\n"

        result = await mcpapps("restart", "nope", cwd=project.root)
        assert (result.returncode, result.stderr) == (1, "mcpapps: error: unknown app 'nope'\n")
        for command in (("restart", "nope"), ("logs", "nope")):
            result = await mcpapps(*command, "--json", cwd=project.root)
            assert (result.returncode, result.stderr) == (1, ""), command
            answer = json.loads(result.stdout)
            assert answer == {"error": {"code": "unknown_app", "message": "unknown app 'nope'"}}
            assert result.stdout == json.dumps(answer, indent=2) + "\n"  # as answers are printed
        # An answer that is not JSON (the sandbox port's text 404): one line, even with --json.
        sandbox = f"http://127.0.0.1:{port + 1}"
        result = await mcpapps("apps", "--json", "--url", sandbox, cwd=project.root)
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == (
            f"mcpapps: error: {sandbox} answered GET /admin/apps with HTTP 404, not as the"
            " mcpapps admin API does; is the address right?\n"
        )
        result = await mcpapps("start", "off", cwd=project.root)
        assert result.returncode == 1
        assert result.stderr == (
            "mcpapps: error: app 'off' is Disabled: disabled in config entries\n"
        )


async def test_a_failure_the_app_recovered_from_is_shown_as_previous(project: Project) -> None:
    port = write(project, ("plain", ("--stderr-lines", "2")))
    async with serving(project, port):
        before = json.loads((await mcpapps("apps", "--json", cwd=project.root)).stdout)
        [app] = before["apps"]
        assert (app["lastError"], app["previousError"]) == (None, None)
        os.kill(app["pid"], signal.SIGKILL)
        with trio.fail_after(GUARD_S):
            while True:
                listed = json.loads((await mcpapps("apps", "--json", cwd=project.root)).stdout)
                [app] = listed["apps"]
                if app["state"] == "Running" and app["restarts"] == 1:
                    break
                await trio.sleep(0.05)
        # Killed from outside: the app's last stderr line (old, unrelated) is not quoted; and
        # running again, the failure is a previous one, not its last error.
        assert app["lastError"] is None
        assert app["previousError"] == "the process was killed by SIGKILL"
        result = await mcpapps("apps", cwd=project.root)
        assert (
            rows(result.stdout)["plain"][-1]
            == "previous failure: the process was killed by SIGKILL"
        )


@contextlib.asynccontextmanager
async def serving_its_config(project: Project, port: int) -> AsyncIterator[Supervisor]:
    """`mcpapps run` listening where its config says, with no MCPAPPS_PORT to override it (a
    reload reads the config again, and must see its port)."""
    supervisor = Supervisor(project, extra_env={"MCPAPPS_PORT": ""})
    supervisor.port = port
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        try:
            await supervisor.wait_for_log("ready: ")
            await supervisor.wait_for_log(f"front door listening on http://127.0.0.1:{port}")
            yield supervisor
        finally:
            with trio.CancelScope(shield=True):
                assert await supervisor.stop() == 0


async def test_the_commands_reach_the_supervisor_whatever_the_config_says_now(
    project: Project,
) -> None:
    """The running supervisor recorded where it listens: an edited config (a new port, an
    unknown key, broken TOML) no longer says so, and the commands still reach it, so that
    `reload` shows the supervisor's answer."""
    port = write(project, ("plain", ()), server=f'always_require_auth = true\ntoken = "{TOKEN}"')
    written = project.config_path.read_text()
    address = project.root / ".mcpapps" / "supervisor.json"
    async with serving_its_config(project, port) as supervisor:
        recorded = json.loads(address.read_text())
        assert supervisor.process is not None
        assert recorded["pid"] == supervisor.process.pid
        assert type(recorded["started"]) is int  # what tells it from a later holder of its pid
        # A new port: only a restart applies it, and the supervisor says so.
        project.config(written.replace(f"port = {port}", f"port = {free_port()}"))
        result = await mcpapps("reload", cwd=project.root)
        assert result.returncode == 0, result.stderr
        assert "needs a restart: server.port changed" in result.stdout.splitlines()

        # An unknown key: the config cannot be loaded. The supervisor is reached (its token
        # read from the config all the same) and refuses the reload itself.
        project.config(written.replace("[server]\n", "[server]\nprot = 1\n"))
        problem = f"{project.config_path}: server.prot is not a known key (did you mean 'port'?)"
        result = await mcpapps("reload", cwd=project.root)
        assert (result.returncode, result.stdout) == (1, ""), result.stderr
        assert result.stderr == (
            f"mcpapps: error: the config cannot be loaded, so nothing was changed: {problem}\n"
        )
        assert "reload refused: the config cannot be loaded: " in supervisor.log
        result = await mcpapps("reload", "--json", cwd=project.root)
        assert (result.returncode, result.stderr) == (1, ""), result.stderr
        answer = json.loads(result.stdout)
        assert answer["error"]["code"] == "config_refused"
        assert answer["error"]["problems"] == answer["configProblems"] == [problem]
        assert (answer["unchanged"], answer["refused"], answer["started"]) == (["plain"], [], [])
        result = await mcpapps("apps", cwd=project.root)
        assert result.returncode == 0, result.stderr
        assert rows(result.stdout)["plain"][1] == "Running"
        assert result.stderr.startswith(f"mcpapps: warning: {problem} (the supervisor was")

        # TOML that does not parse: the address comes from the supervisor's record alone.
        project.config("[server\n")
        result = await mcpapps("reload", "--token", TOKEN, cwd=project.root)
        assert result.returncode == 1
        assert "is not valid TOML" in result.stderr
        assert result.stderr.startswith("mcpapps: error: the config cannot be loaded, so nothing")
        project.config(written)
    # Once the supervisor is gone, its record is too: with such a config nothing is sent.
    assert not address.exists()
    # Had it been left behind (a crash) and its pid been given to another process since, it
    # is not believed: the config's address is used, with a warning.
    with subprocess.Popen(["sleep", "60"]) as other:
        try:
            address.write_text(json.dumps({**recorded, "pid": other.pid}))
            result = await mcpapps("apps", cwd=project.root)
        finally:
            other.kill()
    assert (result.returncode, result.stdout) == (1, "")
    warning, error = result.stderr.splitlines()
    assert warning == (
        f"mcpapps: warning: {address}: the supervisor that wrote it is gone, and its pid"
        f" {other.pid} is another process's now; ignored it"
    )
    assert error.startswith(f"mcpapps: error: cannot reach the supervisor at {supervisor.url()}: ")
    address.unlink()
    project.config("[server\n")
    result = await mcpapps("apps", cwd=project.root)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"mcpapps: error: {project.config_path}: is not valid TOML")
    assert line.endswith(
        "the supervisor's address cannot be read from it, so nothing was sent to the"
        " supervisor; use --url (and --token if it needs one)"
    )


async def test_a_config_that_does_not_parse_still_names_its_own_state_dir(
    project: Project,
) -> None:
    """With `[state] dir` set and a syntax error elsewhere in the file, the commands still find
    the address file in that dir (the locating keys are read line by line), so `reload` shows
    the supervisor's answer instead of saying that nothing could be sent."""
    port = write(project, ("plain", ()))
    written = project.config_path.read_text() + '\n[state]\ndir = "./var/state"\n'
    project.config(written)
    async with serving_its_config(project, port) as supervisor:
        assert (project.root / "var" / "state" / "supervisor.json").exists()
        project.config(written.replace("[apps]\n", "[apps]\nwatch = tru\n"))  # TOML breaks
        result = await mcpapps("reload", cwd=project.root)
        assert (result.returncode, result.stdout) == (1, ""), result.stderr
        assert result.stderr.startswith(
            "mcpapps: error: the config cannot be loaded, so nothing was changed: "
        ), result.stderr
        assert "is not valid TOML" in result.stderr
        assert "reload refused: the config cannot be loaded: " in supervisor.log
        result = await mcpapps("apps", cwd=project.root)
        assert result.returncode == 0, result.stderr
        assert rows(result.stdout)["plain"][1] == "Running"
        project.config(written)


def test_the_locating_keys_of_toml_that_does_not_parse() -> None:
    """Each `[server]` or `[state]` key on a line that parses alone; nothing from other tables
    or from the broken line."""
    text = (
        'server.host = "127.0.0.1"\n'
        "[server]  # where it listens\n"
        'port = 8123\ntoken = "abc\n'
        "[apps]\nwatch = tru\n"
        '[ state ]\ndir = "./var/state"\n'
        '[apps.entries.x]\nstate.dir = "not this"\n'
    )
    assert salvaged(text) == {
        "server": {"host": "127.0.0.1", "port": 8123},
        "state": {"dir": "./var/state"},
    }


async def test_start_says_when_the_app_fails(project: Project) -> None:
    port = write(project, ("broken", ("--crash-at-start",)))
    project.config(project.config_path.read_text() + "[apps.entries.broken]\nintensity = 0\n")
    async with serving(project, port, ready="gave up after 0 restarts"):
        result = await mcpapps("start", "broken", cwd=project.root)
        assert result.returncode == 1
        assert result.stdout.startswith("broken: Failed: the process exited with code 2")


async def test_start_during_the_restart_backoff_starts_the_app_now(project: Project) -> None:
    port = write(project, ("crashy", ()))
    # A backoff of up to a day: within the test, only the operator's start brings it back.
    project.config(
        project.config_path.read_text()
        + "[apps.entries.crashy]\nbackoff_initial_s = 86400\nbackoff_max_s = 86400\n"
    )
    async with serving(project, port) as supervisor:
        before = json.loads((await mcpapps("apps", "--json", cwd=project.root)).stdout)
        old_pid = before["apps"][0]["pid"]
        crashed = await mcpapps("call", "crashy.crash", cwd=project.root)
        assert crashed.returncode == 1
        await supervisor.wait_for_log("app crashy: restarting in ")

        result = await mcpapps("start", "crashy", cwd=project.root)
        assert result.returncode == 0, result.stdout
        assert result.stdout.startswith("crashy: Running (pid ")
        new_pid = int(result.stdout.split("pid ")[1].rstrip(")\n"))
        assert new_pid != old_pid
        assert alive(new_pid)


async def test_the_token_comes_from_the_generated_file(project: Project) -> None:
    # Bound to every address: auth is required, and `run` generates a token into the state dir.
    port = write(project, ("plain", ()), server='host = "0.0.0.0"')
    async with serving(project, port):
        result = await mcpapps("apps", "--config", "config.toml", cwd=project.root)
        assert result.returncode == 0, result.stderr

        result = await mcpapps("apps", "--token", "wrong", cwd=project.root)
        assert result.returncode == 1
        assert result.stderr.startswith(
            "mcpapps: error: the supervisor refused the token from --token:"
        )
        result = await mcpapps("apps", cwd=project.root, env={"MCPAPPS_TOKEN": "wrong"})
        assert "refused the token from MCPAPPS_TOKEN" in result.stderr
        result = await mcpapps("apps", "--json", "--token", "wrong", cwd=project.root)
        assert (result.returncode, result.stderr) == (1, "")
        assert json.loads(result.stdout)["error"]["code"] == "unauthorized"

        # Elsewhere, with only the address: no token to send.
        elsewhere = project.root / "elsewhere"
        elsewhere.mkdir()
        url = f"http://127.0.0.1:{port}"
        result = await mcpapps("apps", "--url", url, cwd=elsewhere)
        assert result.returncode == 1
        assert result.stderr.startswith("mcpapps: error: the supervisor needs a token: ")
        token = (project.root / ".mcpapps" / "token").read_text().strip()
        result = await mcpapps(
            "call", "plain.echo", '{"text": "t"}', "--url", url, "--token", token, cwd=elsewhere
        )
        assert (result.returncode, result.stdout) == (0, "t\n")


async def test_the_token_comes_from_the_config(project: Project) -> None:
    port = write(project, ("plain", ()), server=f'always_require_auth = true\ntoken = "{TOKEN}"')
    async with serving(project, port):
        result = await mcpapps("call", "plain.echo", '{"text": "c"}', cwd=project.root)
        assert (result.returncode, result.stdout) == (0, "c\n")


def test_the_configs_token_goes_only_to_its_own_server(project: Project) -> None:
    port = write(project, ("plain", ()), server=f'always_require_auth = true\ntoken = "{TOKEN}"')
    config = str(project.config_path)
    for url in (f"http://127.0.0.1:{port}", f"http://localhost:{port}/", f"http://[::1]:{port}"):
        assert remote.find_target(config, url, None, {}).token == TOKEN
    for url in (f"http://127.0.0.1:{port + 1}", f"http://example.com:{port}"):
        assert remote.find_target(config, url, None, {}).token is None
    assert remote.find_target(config, "http://example.com", "given", {}).token == "given"


def test_an_address_file_is_believed_for_its_config_while_its_process_lives(
    project: Project,
) -> None:
    port = write(project, ("plain", ()))
    config = str(project.config_path)
    real = os.path.realpath(config)  # as the supervisor writes it
    (project.root / ".mcpapps").mkdir()
    record = project.root / ".mcpapps" / "supervisor.json"
    dead = subprocess.Popen(["true"])  # a pid whose process has ended (and been reaped)
    dead.wait()
    started = process_start(os.getpid())
    assert started is not None  # Linux
    for pid, named, believed in (
        (os.getpid(), real, True),
        (os.getpid(), str(project.root / "other.toml"), False),
        (dead.pid, real, False),
    ):
        record.write_text(json.dumps({"url": "http://127.0.0.1:1", "pid": pid, "config": named}))
        url = remote.find_target(config, None, None, {}).url
        assert url == ("http://127.0.0.1:1" if believed else f"http://127.0.0.1:{port}"), named
    # With its process's start: believed while that same process lives, not once another one
    # holds its pid (this test's child, started later than this test's process).
    with subprocess.Popen(["sleep", "60"]) as other:
        try:
            for pid, believed in ((os.getpid(), True), (other.pid, False)):
                written = {"url": "http://127.0.0.1:1", "pid": pid, "config": real}
                record.write_text(json.dumps({**written, "started": started}))
                target = remote.find_target(config, None, None, {})
                assert target.url == (
                    "http://127.0.0.1:1" if believed else f"http://127.0.0.1:{port}"
                )
                assert target.warnings == (
                    ()
                    if believed
                    else (
                        f"{record}: the supervisor that wrote it is gone, and its pid {pid} is"
                        " another process's now; ignored it",
                    )
                )
        finally:
            other.kill()
    # The config cannot be loaded, and its address is malformed: only the record can say.
    project.config('[server]\nport = "x"\n')
    record.write_text(json.dumps({"url": "http://127.0.0.1:1", "pid": os.getpid(), "config": real}))
    assert remote.find_target(config, None, None, {}).url == "http://127.0.0.1:1"
    record.unlink()
    with pytest.raises(remote.RemoteError, match="nothing was sent to the supervisor; use --url"):
        remote.find_target(config, None, None, {})
    project.config('[server]\ntoken_file = "missing"\n')
    unreadable = r"does not exist; nothing was sent .* use --token"
    with pytest.raises(remote.RemoteError, match=unreadable):
        remote.find_target(config, None, None, {})


def test_an_unreachable_supervisor_is_one_clear_line(project: Project) -> None:
    port = write(project, ("plain", ()))
    for command in (
        ("apps",),
        ("call", "plain.echo"),
        ("restart", "plain"),
        ("logs", "plain"),
        ("reload", "--json"),  # no answer, so no JSON to print either
    ):
        result = run_mcpapps(*command, cwd=project.root)
        assert result.returncode == 1, command
        [line] = result.stderr.splitlines()
        assert line.startswith(
            f"mcpapps: error: cannot reach the supervisor at http://127.0.0.1:{port}: "
        )
        assert line.endswith("; is `mcpapps run` running?")
        assert result.stdout == ""


def test_usage_and_config_errors(project: Project) -> None:
    result = run_mcpapps("apps", "--url", "localhost:1", cwd=project.root)
    assert result.returncode == 2
    assert "--url must be an http(s) URL" in result.stderr
    for url, why in (
        ("http://[::1", "is not a valid URL (Invalid port: ':1')"),
        ("http://127.0.0.1:99999", "is not a valid URL (Port out of range 0-65535)"),
    ):
        result = run_mcpapps("apps", "--url", url, cwd=project.root)
        assert result.returncode == 2
        assert result.stderr.splitlines()[-1] == f'mcpapps apps: error: --url {why}, not "{url}"'

    result = run_mcpapps("restart", cwd=project.root)
    assert result.returncode == 2

    result = run_mcpapps("apps", "--config", "missing.toml", cwd=project.root)
    assert result.returncode == 1
    assert result.stderr.startswith(f"mcpapps: error: {project.root / 'missing.toml'}: config")

    # A wildcard bind is reached on loopback: 0.0.0.0 → 127.0.0.1, :: → [::1].
    port = free_port()
    project.config(f'[server]\nhost = "::"\nport = {port}\n')
    result = run_mcpapps("apps", cwd=project.root)
    assert f"cannot reach the supervisor at http://[::1]:{port}: " in result.stderr


def test_an_address_file_that_cannot_be_believed_is_ignored_with_a_warning(
    project: Project,
) -> None:
    """A corrupt address file (a crash mid-write of an older version, a hand edit) is passed
    over as one whose process is gone, with a warning: the config's address is used."""
    port = write(project, ("plain", ()))
    real = os.path.realpath(project.config_path)
    (project.root / ".mcpapps").mkdir()
    record = project.root / ".mcpapps" / "supervisor.json"

    def written(url: object, pid: object) -> bytes:
        return json.dumps({"url": url, "pid": pid, "config": real}).encode()

    alive_pid = os.getpid()
    not_believed = 'is not an address file of `mcpapps run`: it needs a "url" string and a "pid"'
    for content, why in (
        (written("http://127.0.0.1:1", 2**31), not_believed),  # more than os.kill takes
        (written("http://127.0.0.1:1", 10**20), not_believed),
        (written("http://127.0.0.1:1", "1"), not_believed),
        (written("http://127.0.0.1:1", alive_pid)[:-1] + b', "started": "12"}', not_believed),
        (b"[]", "is not a JSON object"),
        (b"[" * 100_000, "is not valid JSON"),  # deeper than the parser recurses
        (b"\xff\xfe", "is not valid JSON"),
        (written("http://[::1", alive_pid), ': its "url" "http://[::1" is not a valid URL'),
        (written("http://127.0.0.1:1\n", alive_pid), ': its "url" "http://127.0.0.1:1\\n" is'),
    ):
        record.write_bytes(content)
        result = run_mcpapps("apps", cwd=project.root)
        assert (result.returncode, result.stdout) == (1, ""), content[:40]
        warning, error = result.stderr.splitlines()
        assert warning.startswith(f"mcpapps: warning: {record}{' ' * (why[0] != ':')}{why}")
        assert warning.endswith("; ignored it")
        assert error.startswith(
            f"mcpapps: error: cannot reach the supervisor at http://127.0.0.1:{port}: "
        )
        remove_address(record.parent, 1)  # another `run` stopping: not its file, left alone
        assert record.read_bytes() == content


def test_a_token_that_cannot_be_sent_is_refused_before_sending(project: Project) -> None:
    write(project, ("plain", ()))
    for token in ("é", "a\nb"):
        result = run_mcpapps("apps", "--token", token, cwd=project.root)
        assert result.returncode == 2
        assert result.stderr.splitlines()[-1] == (
            "mcpapps apps: error: --token must be printable ASCII (it is sent in an HTTP header)"
        )
    for url in ((), ("--url", "http://127.0.0.1:1")):
        result = run_mcpapps("apps", *url, cwd=project.root, env={"MCPAPPS_TOKEN": "é"})
        assert (result.returncode, result.stdout) == (1, ""), url
        assert result.stderr == (
            "mcpapps: error: the token from MCPAPPS_TOKEN must be printable ASCII (it is sent in"
            " an HTTP header); nothing was sent to the supervisor\n"
        )
    (project.root / ".mcpapps").mkdir()
    generated = project.root / ".mcpapps" / "token"
    generated.write_bytes(b"\xff\xfe")
    result = run_mcpapps("apps", cwd=project.root)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"mcpapps: error: the generated token {generated} is not UTF-8 text; nothing was sent to"
        " the supervisor; use --token\n"
    )


def test_an_app_id_no_app_can_have_is_a_usage_error(project: Project) -> None:
    """Sent, it would reach another route of the admin API ('/' splits the path, '.' and '..'
    are taken out of it) and come back as that route's error."""
    write(project, ("plain", ()))
    for command, app_id in (
        ("logs", ""),
        ("logs", "a/b"),
        ("logs", ".."),
        ("start", ".."),
        ("stop", "."),
    ):
        result = run_mcpapps(command, app_id, cwd=project.root)
        assert (result.returncode, result.stdout) == (2, ""), (command, app_id)
        assert result.stderr.splitlines()[-1] == (
            f'mcpapps {command}: error: "{app_id}" is not an app id: app ids are 1 to 64'
            " letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
