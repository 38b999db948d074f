"""`mcpapps import-openclaw`: OpenClaw.NET's appsettings.json (its McpApps section) to our
config.toml, run as a user runs it; every result must pass `mcpapps validate`."""

from __future__ import annotations

import json
import shutil
from typing import Any

from supervisor.model.config import AppEntry, load_config
from tests.support.helpers import Project, run_mcpapps
from tests.support.running import GROCERY

# The configuration example of the source documents, as they give it.
SEED_EXAMPLE = {
    "McpApps": {
        "Enabled": True,
        "DiscoveryPaths": ["./mcpapps"],
        "AllowlistSemantics": "legacy",
        "Allow": ["*"],
        "Deny": [],
        "Entries": {
            "grocery-inventory": {
                "Enabled": True,
                "Url": "https://localhost:5001/mcp",
                "ToolNamePrefix": "grocery.",
                "StartupTimeoutSeconds": 15,
            }
        },
    }
}


def imported(project: Project, settings: Any, *, text: str | None = None) -> tuple[str, list[str]]:
    """Import `settings` written as appsettings.json; the config written, and the report."""
    (project.root / "appsettings.json").write_text(text or json.dumps(settings, indent=2))
    project.config_path.unlink()
    done = run_mcpapps(
        "import-openclaw", "appsettings.json", "--out", "config.toml", cwd=project.root
    )
    assert done.returncode == 0, done.stderr
    report = done.stderr.splitlines()
    assert report[0] == "wrote config.toml; check it with: mcpapps validate --config config.toml"
    checked = run_mcpapps("validate", "--config", "config.toml", cwd=project.root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return project.config_path.read_text(), report[1:]


def test_the_seed_example(project: Project) -> None:
    shutil.copytree(GROCERY, project.root / "mcpapps" / "grocery-inventory")
    _, report = imported(project, SEED_EXAMPLE)
    assert report == []
    config = load_config(project.config_path, {})
    assert config.apps.enabled is True
    assert config.apps.discovery_paths == (project.root / "mcpapps",)
    assert config.apps.allowlist_semantics == "legacy"
    assert config.apps.allow == ("*",)
    assert config.apps.deny == ()
    assert config.apps.entries == {
        "grocery-inventory": AppEntry(
            enabled=True,
            url="https://localhost:5001/mcp",
            tool_name_prefix="grocery.",
            startup_timeout_s=15,
        )
    }
    validated = run_mcpapps("validate", "--config", "config.toml", cwd=project.root)
    assert "grocery-inventory" in validated.stdout


def test_every_field_nested_under_openclaw_with_dotnet_casing(project: Project) -> None:
    """Keys in any case (.NET binds them case-insensitively), the section under `OpenClaw`,
    comments and trailing commas (which .NET reads), Windows separators, the compatibility
    switch: everything maps, nothing is reported."""
    (project.root / "apps").mkdir()
    (project.root / "more" / "apps").mkdir(parents=True)
    text = """{
      // OpenClaw.NET reads comments and trailing commas in appsettings.json
      "OpenClaw": {
        "McpCompatibility": { "Mode": "legacy" },
        "mcpApps": {
          "enabled": "true",
          "DiscoveryPaths": ["./apps", "more\\\\apps"],
          "AllowlistSemantics": "Strict",
          "Allow": ["grocery-*", "weather"],
          "Deny": ["grocery-old"],
          "Entries": {
            "weather": {
              "Enabled": false,
              "Transport": "streamable-http",
              "Command": "node",
              "Arguments": ["server.js", "--port", "8000"],
              "Url": "http://127.0.0.1:8000/mcp",
              "Headers": { "X-Key": "${env:WEATHER_KEY}" },
              "ToolNamePrefix": "weather.",
              "StartupTimeoutSeconds": "30",
              "RequestTimeoutSeconds": 120,
              "Environment": { "LOG_LEVEL": "debug" },
            },
            "a.b": { "enabled": true },
          },
        },
      },
    }"""
    _, report = imported(project, None, text=text)
    assert report == []
    config = load_config(project.config_path, {})
    assert config.apps.enabled is True
    assert config.apps.discovery_paths == (project.root / "apps", project.root / "more" / "apps")
    assert config.apps.allowlist_semantics == "strict"
    assert config.apps.allow == ("grocery-*", "weather")
    assert config.apps.deny == ("grocery-old",)
    assert config.apps.protocol == "handshake"
    assert config.apps.entries == {
        "weather": AppEntry(
            enabled=False,
            transport="streamable-http",
            command="node",
            arguments=("server.js", "--port", "8000"),
            url="http://127.0.0.1:8000/mcp",
            headers={"X-Key": "${env:WEATHER_KEY}"},
            tool_name_prefix="weather.",
            startup_timeout_s=30,
            request_timeout_s=120,
            environment={"LOG_LEVEL": "debug"},
        ),
        "a.b": AppEntry(enabled=True),
    }


def test_unknown_keys_are_reported_and_kept_as_comments(project: Project) -> None:
    settings = {
        "Logging": {"LogLevel": {"Default": "Information"}},
        "McpApps": {
            "DiscoveryPaths": ["./mcpapps"],
            "Allow": "grocery-*",
            "AllowlistSemantics": "open",
            "HotReload": True,
            "McpCompatibility": {"Mode": "stateless", "StrictSchemas": True},
            "Entries": {
                "grocery-inventory": {
                    "Retries": 3,
                    "StartupTimeoutSeconds": 900,
                    "ToolNamePrefix": "grocery.",
                }
            },
        },
    }
    text, report = imported(project, settings)
    expected = [
        "Logging: outside the McpApps section: not imported",
        'McpApps.Allow: must be a list of strings, got "grocery-*": not imported',
        "McpApps.AllowlistSemantics: must be 'legacy' or 'strict', got \"open\"",
        "McpApps.HotReload: not a known McpApps setting",
        "McpApps.McpCompatibility.StrictSchemas: no mcpapps setting matches it; [apps] protocol"
        " (auto, handshake, stateless) is the compatibility switch here: set it by hand if"
        " needed",
        "McpApps.Entries.grocery-inventory.Retries: not an entry setting mcpapps has",
        "McpApps.Enabled: is not set, and OpenClaw.NET's default is false: written as"
        " apps.enabled = false; set it to true to run the apps",
        "McpApps.Entries.grocery-inventory.StartupTimeoutSeconds: mcpapps refuses it:"
        " apps.entries.grocery-inventory.startup_timeout_s must be an integer from 1 to 600,"
        " got 900",
    ]
    assert report == [f"not imported: {line}" for line in expected]
    for line in expected:
        assert f"#   {line}\n" in text
    config = load_config(project.config_path, {})
    assert config.apps.enabled is False
    assert config.apps.protocol == "stateless"
    assert config.apps.entries["grocery-inventory"] == AppEntry(tool_name_prefix="grocery.")


def test_a_file_without_the_section_is_an_error(project: Project) -> None:
    (project.root / "appsettings.json").write_text('{"Logging": {}}')
    done = run_mcpapps("import-openclaw", "appsettings.json", cwd=project.root)
    assert done.returncode == 1
    assert "has no McpApps object (at the top level or under OpenClaw)" in done.stderr
    printed = run_mcpapps("import-openclaw", "nope.json", cwd=project.root)
    assert printed.returncode == 1
    assert "cannot read nope.json" in printed.stderr


def test_printed_when_no_out_is_given(project: Project) -> None:
    (project.root / "appsettings.json").write_text(json.dumps(SEED_EXAMPLE))
    done = run_mcpapps("import-openclaw", "appsettings.json", cwd=project.root)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert (
        '[apps.entries.grocery-inventory]\nenabled = true\nurl = "https://localhost:5001/mcp"'
        in (done.stdout)
    )


def test_an_unknown_transport_is_refused_by_validate_not_run_as_stdio(project: Project) -> None:
    """The entry's transport is written as OpenClaw.NET had it; mcpapps refuses it for that
    app rather than running the manifest's command (grocery's is a stdio app)."""
    shutil.copytree(GROCERY, project.root / "mcpapps" / "grocery-inventory")
    settings = {
        "McpApps": {
            "Enabled": True,
            "DiscoveryPaths": ["./mcpapps"],
            "Entries": {"grocery-inventory": {"Transport": "websocket"}},
        }
    }
    (project.root / "appsettings.json").write_text(json.dumps(settings))
    project.config_path.unlink()
    done = run_mcpapps(
        "import-openclaw", "appsettings.json", "--out", "config.toml", cwd=project.root
    )
    assert done.returncode == 0, done.stderr
    checked = run_mcpapps("validate", "--config", "config.toml", "--json", cwd=project.root)
    assert checked.returncode != 0
    [app] = json.loads(checked.stdout)["apps"]
    assert (app["id"], app["state"]) == ("grocery-inventory", "Discovered")
    assert [e["message"] for e in app["errors"]] == [
        "'transport' \"websocket\" is not supported: use 'stdio', 'http', 'sse'"
        " ('streamable-http' is read as 'http') (set by apps.entries.grocery-inventory.transport"
        " in config.toml)"
    ]
