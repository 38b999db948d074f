"""`mcpapps import`: the MCP servers of Claude Desktop, Cursor and VS Code configs (comments,
inputs, unknown keys and secrets included) added to config.toml as a user runs it; the result
loaded with our own `load_config` and discovery, importing twice adding nothing, and no secret
ever written or printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from supervisor.model import jsontext
from supervisor.model.config import load_config
from supervisor.model.discovery import discover
from supervisor.model.mcpservers import import_servers, looks_secret
from tests.support.helpers import Project, run_mcpapps

GITHUB_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
BRAVE_KEY = "BSAq7Zb3kLmN9pQrStUvWxYz0123456"
SENTRY_TOKEN = "sntrys_eyJpYXQiOjE3MDAwMDAwMDB9_abcdef"
LINEAR_BEARER = "lin_api_9f8e7d6c5b4a3928171605f4e3d2c1b0"

CLAUDE_DESKTOP = f"""{{
  // Claude Desktop: ~/Library/Application Support/Claude/claude_desktop_config.json
  "mcpServers": {{
    "filesystem": {{
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/ada/Desktop"],
    }},
    "github": {{
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {{
        "GITHUB_PERSONAL_ACCESS_TOKEN": "{GITHUB_TOKEN}",
        "GITHUB_TOOLSETS": "repos,issues", /* not a secret: copied */
      }},
    }},
    "brave search": {{
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-brave-search"],
      "env": {{"BRAVE": "{BRAVE_KEY}"}},  // a secret by its looks, not its name
      "disabled": true,
      "autoApprove": ["brave_web_search"],
    }},
    "leaky": {{"command": "sentry-mcp", "args": ["--access-token", "{SENTRY_TOKEN}"]}},
  }},
  "globalShortcut": "Cmd+Shift+Space",
}}
"""

CURSOR = f"""{{
  "mcpServers": {{
    // Streamable HTTP when no type is given
    "linear": {{
      "url": "https://mcp.linear.app/mcp",
      "headers": {{"Authorization": "Bearer {LINEAR_BEARER}", "X-Team": "core"}},
    }},
    "legacy-events": {{"type": "sse", "url": "http://127.0.0.1:8931/sse"}},
    "db": {{
      "command": "uvx",
      "args": ["mcp-server-postgres"],
      "env": {{"DATABASE_URL": "${{env:DATABASE_URL}}"}},
      "envFile": ".env",
    }},
  }},
}}
"""

VSCODE = """{
  // .vscode/mcp.json
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key",
     "password": true},
    {"type": "promptString", "id": "notion-token", "description": "Notion token", "password": true},
  ],
  "servers": {
    "perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
      "dev": {"watch": "src/**/*.ts"},
    },
    "notion": {
      "type": "http",
      "url": "https://mcp.notion.com/mcp",
      "headers": {"Authorization": "Bearer ${input:notion-token}"},
    },
    "files": {"type": "stdio", "command": "mcp-files", "args": ["${workspaceFolder}/docs"],
              "cwd": "${workspaceFolder}"},
    "asks-in-args": {"command": "tool", "args": ["--key", "${input:perplexity-key}"]},
    "carrier-pigeon": {"type": "pigeon", "url": "http://127.0.0.1:1/x"},
  },
}
"""

SECRETS = (GITHUB_TOKEN, BRAVE_KEY, SENTRY_TOKEN, LINEAR_BEARER)
VARIABLES = {
    "GITHUB_PERSONAL_ACCESS_TOKEN": "t1",
    "BRAVE": "t2",
    "LINEAR_AUTHORIZATION": "t3",
    "DATABASE_URL": "postgres://localhost/db",
    "PERPLEXITY_KEY": "t4",
    "NOTION_TOKEN": "t5",
}


def write_source(project: Project, name: str, text: str) -> Path:
    path = project.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_claude_desktop_config_is_added_to_config_toml_in_place(project: Project) -> None:
    original = (
        "# my own config: these comments must survive\n"
        "[server]\nport = 18789  # the usual port\n\n[apps]\ndiscovery_paths = []"  # no final \n
    )
    project.config(original)
    write_source(project, "claude_desktop_config.json", CLAUDE_DESKTOP)

    done = run_mcpapps("import", "claude_desktop_config.json", cwd=project.root)

    assert done.returncode == 0, done.stderr
    text = project.config_path.read_text()
    assert text.startswith(original + "\n")  # appended: the person's text kept as written
    out = done.stdout
    assert out.splitlines()[0] == (
        f"added to {project.config_path.name}: filesystem (stdio), github (stdio),"
        " brave-search (stdio, from 'brave search', disabled)"
    )
    assert "skipped: mcpServers.leaky: args[1] holds what looks like a secret" in out
    assert "not imported: (top level): 'globalShortcut': not about MCP servers" in out
    assert "not imported: mcpServers.brave search.autoApprove: mcpapps has no list" in out
    assert "  GITHUB_PERSONAL_ACCESS_TOKEN (for mcpServers.github.env." in out
    assert "  BRAVE (for mcpServers.brave search.env.BRAVE)" in out
    for secret in SECRETS:
        assert secret not in text + done.stdout + done.stderr

    config = load_config(project.config_path, VARIABLES)
    apps = {app.id: app for app in discover(config, VARIABLES).apps}
    assert {i: a.state.value for i, a in apps.items()} == {
        "filesystem": "Validated",
        "github": "Validated",
        "brave-search": "Disabled",
    }
    github = apps["github"].definition
    assert github is not None
    assert github.manifest.command == "npx"
    assert github.manifest.arguments == ("-y", "@modelcontextprotocol/server-github")
    assert github.manifest.environment == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GITHUB_PERSONAL_ACCESS_TOKEN}",
        "GITHUB_TOOLSETS": "repos,issues",
    }
    brave = apps["brave-search"].definition
    assert brave is not None
    assert brave.manifest.name == "brave search"

    # Without the variables, validate names each one it misses.
    missing = run_mcpapps("validate", cwd=project.root)
    assert missing.returncode == 1
    assert "GITHUB_PERSONAL_ACCESS_TOKEN is not set in the environment" in missing.stdout
    valid = run_mcpapps("validate", cwd=project.root, env=VARIABLES)
    assert valid.returncode == 0, valid.stdout

    # Importing twice adds nothing, and says so for each server.
    again = run_mcpapps("import", "claude_desktop_config.json", cwd=project.root)
    assert again.returncode == 0, again.stderr
    assert project.config_path.read_text() == text
    assert again.stdout.splitlines()[0] == f"nothing added to {project.config_path.name}"
    assert (
        "skipped: mcpServers.github: the config has an app 'github' already: left as it is,"
        " not imported again"
    ) in again.stdout


def test_cursor_config_with_urls_headers_and_references(project: Project) -> None:
    project.config("[apps]\ndiscovery_paths = []\n")
    write_source(project, "mcp.json", CURSOR)
    done = run_mcpapps("import", "mcp.json", "--out", "-", cwd=project.root)
    assert done.returncode == 0, done.stderr
    assert project.config_path.read_text() == "[apps]\ndiscovery_paths = []\n"  # untouched
    toml = done.stdout
    assert LINEAR_BEARER not in toml + done.stderr
    assert '[apps.inline.linear]\ntransport = "http"\nurl = "https://mcp.linear.app/mcp"\n' in toml
    assert 'Authorization = "Bearer ${env:LINEAR_AUTHORIZATION}"\nX-Team = "core"' in toml
    assert '[apps.inline.legacy-events]\ntransport = "sse"\n' in toml
    assert 'DATABASE_URL = "${env:DATABASE_URL}"' in toml  # a reference stays one
    assert "not imported: mcpServers.db.envFile: mcpapps reads no env files" in done.stderr
    assert "  DATABASE_URL (for mcpServers.db.env.DATABASE_URL)" in done.stderr

    (project.root / "more.toml").write_text("[apps]\ndiscovery_paths = []\n\n" + toml)
    config = load_config(project.root / "more.toml", VARIABLES)
    states = {a.id: (a.state.value, a.transport) for a in discover(config, VARIABLES).apps}
    assert states == {
        "linear": ("Validated", "http"),
        "legacy-events": ("Validated", "sse"),
        "db": ("Validated", "stdio"),
    }


def test_vscode_config_with_inputs_as_manifests(project: Project) -> None:
    project.config('[apps]\ndiscovery_paths = ["./apps"]\n')
    source = write_source(project, ".vscode/mcp.json", VSCODE)
    done = run_mcpapps("import", ".vscode/mcp.json", "--manifests", "apps", cwd=project.root)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "  PERPLEXITY_KEY (for Perplexity API Key)" in out
    assert "  NOTION_TOKEN (for Notion token)" in out
    assert "not imported: servers.perplexity.dev: VS Code's development mode" in out
    assert "skipped: servers.asks-in-args: args[1] asks for ${input:perplexity-key}" in out
    assert 'skipped: servers.carrier-pigeon: its type "pigeon" is none of stdio, http, sse' in out

    manifest = json.loads((project.root / "apps/notion/openclaw.mcpapp.json").read_text())
    assert manifest == {
        "id": "notion",
        "transport": "http",
        "url": "https://mcp.notion.com/mcp",
        "headers": {"Authorization": "Bearer ${env:NOTION_TOKEN}"},
    }
    files = json.loads((project.root / "apps/files/openclaw.mcpapp.json").read_text())
    assert files["arguments"] == [f"{project.root}/docs"]  # the workspace: .vscode's parent
    assert files["workingDirectory"] == str(project.root)
    assert source.parent.name == ".vscode"

    config = load_config(project.config_path, VARIABLES)
    states = {a.id: a.state.value for a in discover(config, VARIABLES).apps}
    assert states == {"files": "Validated", "notion": "Validated", "perplexity": "Validated"}

    again = run_mcpapps("import", ".vscode/mcp.json", "--manifests", "apps", cwd=project.root)
    assert again.returncode == 0
    assert "skipped: servers.notion: the config has an app 'notion' already" in again.stdout


def test_two_secrets_that_want_one_name_get_two_variables() -> None:
    data = {
        "mcpServers": {
            "a": {"command": "a", "env": {"API_KEY": "first-secret-value"}},
            "b": {"command": "b", "env": {"API_KEY": "second-secret-value"}},
            "c": {"command": "c", "env": {"API_KEY": "first-secret-value"}},
        }
    }
    imported = import_servers(data, source=Path("mcp.json"))
    assert [v.name for v in imported.variables] == ["API_KEY", "B_API_KEY"]
    assert [app.fields["environment"]["API_KEY"] for app in imported.apps] == [
        "${env:API_KEY}",
        "${env:B_API_KEY}",
        "${env:API_KEY}",
    ]


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("GITHUB_TOKEN", "anything", True),
        ("OPENAI_API_KEY", "x", True),
        ("DB_PASSWORD", "hunter2", True),
        ("Authorization", "Basic YWxhZGRpbjpvcGVu", True),
        ("X", "sk-proj-abc", True),
        ("X", "xoxb-1234-5678", True),
        ("DATABASE_URL", "postgres://ada:pw@db.example/app", True),
        ("X", "0f8b2c4e6a1d3f5b7c9e2a4d6f8b0c1e", True),  # long and random-looking
        ("LOG_LEVEL", "debug", False),
        ("NODE_ENV", "production", False),
        ("PORT", "3000", False),
        ("ROOT", "/Users/ada/projects/some-long-folder-name-2024", False),
        ("BASE_URL", "https://api.example.com/v1", False),
    ],
)
def test_what_counts_as_a_secret(name: str, value: str, secret: bool) -> None:
    assert looks_secret(name, value) is secret


def test_a_file_without_servers_or_not_json_is_refused(project: Project) -> None:
    write_source(project, "settings.json", '{"editor.fontSize": 14}')
    done = run_mcpapps("import", "settings.json", cwd=project.root)
    assert done.returncode == 1
    assert done.stderr == (
        "mcpapps: error: settings.json: has no 'mcpServers' object (Claude Desktop, Cursor)"
        " nor 'servers' object (VS Code): is this an MCP client's config file?\n"
    )
    write_source(project, "broken.json", '{"mcpServers": {"a": {"command": "x"}')
    done = run_mcpapps("import", "broken.json", cwd=project.root)
    assert done.returncode == 1
    assert done.stderr.startswith("mcpapps: error: broken.json is not valid JSON: ")
    assert "line 1" in done.stderr


def test_vscode_settings_json_with_an_mcp_section() -> None:
    data = jsontext.parse(
        '{"editor.fontSize": 14, "mcp": {"servers": {"t": {"command": "t"}}, "x": 1}}'
    )
    imported = import_servers(data, source=Path("settings.json"))
    assert [app.id for app in imported.apps] == ["t"]
    assert [str(u) for u in imported.unmapped] == [
        "(top level): 'editor.fontSize', 'mcp.x': not about MCP servers, not imported"
    ]


def test_secrets_in_urls_and_claude_code_references() -> None:
    data = {
        "mcpServers": {
            "keyed": {"url": "https://example.com/mcp?api_key=abc123"},
            "coded": {
                "type": "http",
                "url": "https://example.com/mcp",
                "headers": {"X-Api-Key": "${API_KEY:-dev-key}", "X-Retries": 3},
            },
        }
    }
    imported = import_servers(data, source=Path(".mcp.json"))
    assert [str(s) for s in imported.skipped] == [
        "mcpServers.keyed: url holds what looks like a secret, which mcpapps would have to copy"
        " (it expands ${env:NAME} only in env and headers): not imported"
    ]
    [coded] = imported.apps
    assert coded.fields["headers"] == {"X-Api-Key": "${env:API_KEY}", "X-Retries": "3"}
    assert [str(u) for u in imported.unmapped] == [
        "mcpServers.coded.headers.X-Api-Key: the default in ${API_KEY:-dev-key} is dropped:"
        " set API_KEY"
    ]
    assert [v.name for v in imported.variables] == ["API_KEY"]


def test_a_server_type_mcpapps_does_not_have_is_not_imported_as_stdio() -> None:
    """The type names the transport, its punctuation and case as the clients write it; one
    that is none of ours is left out, even when a command is there to run."""
    data = {
        "mcpServers": {
            "ws": {"type": "websocket", "command": "ws-server", "url": "ws://127.0.0.1:1/"},
            "cline": {"type": "streamableHttp", "url": "https://example.com/mcp"},
            "events": {"type": "SSE", "url": "https://example.com/sse"},
        }
    }
    imported = import_servers(data, source=Path("mcp.json"))
    assert [str(s) for s in imported.skipped] == [
        'mcpServers.ws: its type "websocket" is none of stdio, http, sse: not imported'
    ]
    assert [(app.id, app.fields) for app in imported.apps] == [
        ("cline", {"transport": "http", "url": "https://example.com/mcp"}),
        ("events", {"transport": "sse", "url": "https://example.com/sse"}),
    ]


def test_two_servers_with_one_id_import_the_first() -> None:
    data = {"mcpServers": {"my tool": {"command": "a"}, "my-tool": {"command": "b"}}}
    imported = import_servers(data, source=Path("mcp.json"))
    assert [(app.id, app.fields["command"]) for app in imported.apps] == [("my-tool", "a")]
    assert [str(s) for s in imported.skipped] == [
        "mcpServers.my-tool: another server of this file is imported as 'my-tool': rename one"
        " of them"
    ]
