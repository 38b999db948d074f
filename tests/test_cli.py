"""`mcpapps validate` as a user runs it: a real process, its output and its exit status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import MANIFEST, Project, run_mcpapps, stdio

ROOT = Path(__file__).parent.parent


def test_the_bundled_default_validates() -> None:
    result = run_mcpapps("validate", "--config", "config.toml", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"config: {ROOT / 'config.toml'}"
    assert lines[1].split() == [
        "grocery-inventory",
        "Validated",
        "stdio",
        f"mcpapps/grocery-inventory/{MANIFEST}",
    ]
    assert lines[-1] == "1 app: 1 Validated"


def test_python_dash_m_supervisor_is_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "supervisor", "validate", "--json"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("MCPAPPS_")},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["apps"][0]["id"] == "grocery-inventory"


def test_invalid_apps_are_listed_with_every_reason_and_exit_1(project: Project) -> None:
    project.manifest("mcpapps/a-ok", stdio("ok", version="1.0"))
    project.manifest("mcpapps/b-bad", {"id": "bad", "transport": "http", "url": "nope"})
    project.manifest("mcpapps/c-json", '{"id": "x" "command": "c"}')
    project.manifest("mcpapps/d-off", stdio("off"))
    project.config('[apps]\ndeny = ["of?"]\n[apps.entries.ghost]\n')

    result = run_mcpapps("validate", cwd=project.root)

    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"config: {project.config_path}",
        f"ok       Validated             stdio  mcpapps/a-ok/{MANIFEST}",
        f"    warning: mcpapps/a-ok/{MANIFEST}: 'version' \"1.0\" is not a semantic version"
        " (such as 1.2.0)",
        f"bad      Discovered (invalid)  http   mcpapps/b-bad/{MANIFEST}",
        f"    error: mcpapps/b-bad/{MANIFEST}: 'url' \"nope\" must be an absolute http:// or"
        " https:// URL, such as http://127.0.0.1:8000/mcp",
        f"(no id)  Discovered (invalid)  -      mcpapps/c-json/{MANIFEST}",
        f"    error: mcpapps/c-json/{MANIFEST}: is not valid JSON: expected ',' or '}}' but found"
        " '\"' at line 1, column 12",
        f"off      Disabled              stdio  mcpapps/d-off/{MANIFEST}",
        "    disabled: matches deny pattern 'of?'",
        "warning: config.toml: apps.entries.ghost names no discovered app",
        "",
        "4 apps: 1 Validated, 2 Discovered (invalid), 1 Disabled",
        "Fix the errors above and run `mcpapps validate` again.",
    ]


def test_json_output_carries_states_reasons_and_definitions(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a", toolNamePrefix="a."))
    project.manifest("mcpapps/b", {"id": "b"})
    result = run_mcpapps("validate", "--json", "--config", str(project.config_path), cwd=ROOT)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert report["config"] == str(project.config_path)
    a, b = report["apps"]
    assert (a["id"], a["state"], a["valid"], a["transport"]) == ("a", "Validated", True, "stdio")
    assert a["source"] == str(project.root / "mcpapps/a" / MANIFEST)
    assert a["definition"]["manifest"]["toolNamePrefix"] == "a."
    assert a["definition"]["manifest"]["workingDirectory"] == str(project.root / "mcpapps/a")
    assert a["definition"]["protocol"] == "auto"
    assert a["definition"]["supervision"]["backoffInitialS"] == 0.5
    assert (b["state"], b["valid"], b["definition"]) == ("Discovered", False, None)
    assert b["errors"] == [
        {
            "source": str(project.root / "mcpapps/b" / MANIFEST),
            "message": "transport is 'stdio' but no 'command' is given",
        }
    ]


def test_config_errors_exit_1_and_name_every_key(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.config('[server]\nport = 0\nhots = "x"\n[apps]\nallowlist_semantics = "open"\n')
    result = run_mcpapps("validate", cwd=project.root)
    assert result.returncode == 1
    path = project.config_path
    assert result.stdout.splitlines() == [
        f"error: {path}: server.port must be an integer from 1 to 65535, got 0",
        f"error: {path}: server.hots is not a known key (did you mean 'host'?)",
        f"error: {path}: apps.allowlist_semantics must be one of 'legacy', 'strict', got \"open\"",
        "",
        "3 problems with the config; no app was checked. Fix them and run"
        " `mcpapps validate` again.",
    ]
    as_json = run_mcpapps("validate", "--json", cwd=project.root)
    assert as_json.returncode == 1
    assert len(json.loads(as_json.stdout)["configErrors"]) == 3


def test_the_config_can_come_from_mcpapps_config(project: Project, tmp_path_factory) -> None:
    project.manifest("mcpapps/a", stdio("from-env"))
    elsewhere = tmp_path_factory.mktemp("cwd")
    result = run_mcpapps(
        "validate", cwd=elsewhere, env={"MCPAPPS_CONFIG": str(project.config_path)}
    )
    assert result.returncode == 0, result.stdout
    assert "from-env" in result.stdout
    missing = run_mcpapps("validate", cwd=elsewhere)
    assert missing.returncode == 1
    assert missing.stdout.startswith(
        f"error: {elsewhere / 'config.toml'}: config file not found; pass --config PATH, set"
        " MCPAPPS_CONFIG, or run where config.toml is"
    )


def test_a_broken_manifest_fails_validation_even_when_disabled(project: Project) -> None:
    project.manifest("mcpapps/a", {"id": "wip"})
    project.config("[apps.entries.wip]\nenabled = false\n")
    result = run_mcpapps("validate", cwd=project.root)
    assert result.returncode == 1, result.stdout
    assert result.stdout.splitlines()[1:4] == [
        f"wip  Discovered (invalid)  stdio  mcpapps/a/{MANIFEST}",
        "    disabled: disabled in config entries",
        f"    error: mcpapps/a/{MANIFEST}: transport is 'stdio' but no 'command' is given",
    ]


def test_ids_and_paths_from_files_cannot_garble_the_terminal(project: Project) -> None:
    project.manifest("mcpapps/a", '{"id": "red\\u001b[31m", "command": "c"}')
    undecodable = os.fsencode(project.root / "mcpapps") + b"/caf\xe9"
    os.mkdir(undecodable)
    with open(undecodable + b"/" + MANIFEST.encode(), "w") as file:
        file.write('{"id": "cafe", "command": "c"}')
    result = run_mcpapps("validate", cwd=project.root, env={"PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("red\\x1b[31m  ")
    assert lines[3].split() == ["cafe", "Validated", "stdio", f"mcpapps/caf\\udce9/{MANIFEST}"]
    as_json = json.loads(run_mcpapps("validate", "--json", cwd=project.root).stdout)
    assert [app["id"] for app in as_json["apps"]] == ["red\x1b[31m", "cafe"]


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    command = [str(Path(sys.executable).parent / "mcpapps"), "validate"]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    process.stdout.close()  # before the command has printed anything
    _, errors = process.communicate(timeout=60)
    assert errors == ""
    assert process.returncode == 1


def test_usage_errors_exit_2() -> None:
    assert run_mcpapps("validate", "--nope", cwd=ROOT).returncode == 2
    assert run_mcpapps(cwd=ROOT).returncode == 2


def validate_with_unreadable(project: Project, folder: str) -> subprocess.CompletedProcess[str]:
    """Run `mcpapps validate` on `project` while `folder` (under it) cannot be read.

    Root reads any folder, so the command runs without the capabilities that let it: the test
    then means the same for root (as in CI) and for a normal user."""
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        prefix = (setpriv, "--bounding-set", "-dac_override,-dac_read_search")
    locked = project.root / folder
    locked.chmod(0)
    try:
        return run_mcpapps("validate", cwd=project.root, prefix=prefix)
    finally:
        locked.chmod(0o755)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses Linux capabilities")
def test_an_unreadable_sub_folder_is_skipped_with_a_warning(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.manifest("mcpapps/locked/inner", stdio("hidden"))
    project.manifest("mcpapps/z", stdio("z"))
    result = validate_with_unreadable(project, "mcpapps/locked")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["a", "z"]
    assert (
        "warning: mcpapps/locked: cannot read this folder (Permission denied); skipped it and"
        " everything under it; fix its permissions to discover its apps" in lines
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses Linux capabilities")
def test_a_discovery_path_inside_an_unreadable_folder_is_a_warning(project: Project) -> None:
    project.manifest("mcpapps/a", stdio("a"))
    project.manifest("locked/apps/b", stdio("b"))
    project.config('[apps]\ndiscovery_paths = ["locked/apps", "mcpapps"]\n')
    result = validate_with_unreadable(project, "locked")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[1].split()[0] == "a"
    assert (
        "warning: locked/apps: cannot read this discovery path (Permission denied);"
        " fix its permissions" in result.stdout.splitlines()
    )
