"""Debian's Chromium headless shell, as every browser test launches it (Playwright drives it;
it downloads no browser of its own).

The headless shell (Debian's `chromium-headless-shell`, built from the same Chromium release as
`chromium`) is the same engine, Blink and V8 with the same site isolation, without the desktop
browser's windows: it is what Playwright itself runs for headless Chromium. Every test opens a
browser context of its own, and in `chromium`'s headless mode each context is a desktop window
with its toolbar: measured on this machine, a context and a blank page cost 0.55 s of CPU there
against 0.29 s in the shell, and the control page 1.75 s against 1.28 s; the browser tests took
165 s instead of 210 s (docs/operations.md, "Round 5").

Playwright passes the flags a test browser wants (no background networking, component updates,
sync or first-run pages, `--no-sandbox`, WebGL on SwiftShader); the tests add none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
INSTALL = "apt-get install -y chromium-headless-shell"


def require() -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            f"the browser tests need Debian's Chromium headless shell at {CHROMIUM}:"
            f" install it with `sudo {INSTALL}` (make test does it as root)"
        )


def launch(playwright: Any) -> Any:
    """The headless shell: a Playwright `Browser`."""
    require()
    return playwright.chromium.launch(executable_path=str(CHROMIUM))
