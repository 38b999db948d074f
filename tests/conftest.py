from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import chromium, forkserver
from tests.support.helpers import Project
from tests.support.postgres import PostgresServer, postgres_server


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project folder with an empty config.toml (every default applies)."""
    return Project(tmp_path)


@pytest.fixture(autouse=True)
def _lifecycle_holds(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """An app actor run in the test's own process made only the lifecycle's transitions."""
    yield
    assert "is not a transition of the lifecycle" not in caplog.text


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server, started once per test worker (tests/support/postgres.py)."""
    with postgres_server() as server:
        yield server


@pytest.fixture
def database_url(postgres: PostgresServer) -> str:
    """A new, empty PostgreSQL database of its own: its URL (with the password)."""
    return postgres.new_database()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Chromium, once per test worker (tests/support/chromium.py): each test opens a context
    of its own in it. Its start and its Playwright driver cost about 1.5 s of CPU."""
    chromium.require()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        yield browser
        browser.close()


def pytest_unconfigure(config: pytest.Config) -> None:
    """The worker's fork server ends with it (tests/support/forkserver.py)."""
    forkserver.stop()
