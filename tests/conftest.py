from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.helpers import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project folder with an empty config.toml (every default applies)."""
    return Project(tmp_path)
