from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project folder with an empty config.toml (every default applies)."""
    return Project(tmp_path)


@pytest.fixture(autouse=True)
def _lifecycle_holds(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """An app actor run in the test's own process made only the lifecycle's transitions."""
    yield
    assert "is not a transition of the lifecycle" not in caplog.text
