"""Debian's Chromium, as every browser test launches it (Playwright drives it; it downloads no
browser of its own).

What the flags leave out is what no test looks at and what costs CPU in every browser context a
test opens (each one is a new browser window in Chromium's headless mode):
- the window's address bar: Chromium preloads its suggestion popup, a WebUI page of some 180
  modules, for every new window and loads it again as a page navigates. That was a third of the
  CPU of opening the control page (1.4 s against 2.1 s of all processes, measured on this
  machine), and the browser tests open a context each.
- background networking, component updates, sync, the first-run pages.

Chromium keeps only the last `--disable-features` it is given, and Playwright passes a list of
its own first. So ours repeats Playwright's, and `launch` checks, from the command line Chromium
says it has, that nothing of Playwright's was dropped (a Playwright upgrade that adds a feature
fails here, by name, instead of quietly turning it back on).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# playwright 1.65.2's own (its chromiumSwitches), which would otherwise be dropped.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "CDPScreenshotNewSurface",
    "SkipListAccountsWithoutGaiaCookies",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
ADDRESS_BAR_POPUPS = ("WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # What chromedriver always passes; here it makes Chromium tell its command line over CDP.
    "--enable-automation",
    "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + ADDRESS_BAR_POPUPS),
]


def require() -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            "the browser tests need Debian's chromium at /usr/bin/chromium:"
            " install it with `sudo apt-get install -y chromium` (make test does it as root)"
        )


def launch(playwright: Any) -> Any:
    """Chromium, headless, with `ARGS`: a Playwright `Browser`."""
    require()
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    session = browser.new_browser_cdp_session()
    line = session.send("Browser.getBrowserCommandLine")["arguments"]
    session.detach()
    given = [a.split("=", 1)[1].split(",") for a in line if a.startswith("--disable-features=")]
    dropped = set().union(*given[:-1]) - set(given[-1]) if given else set()
    if dropped:
        browser.close()
        raise AssertionError(
            f"Playwright now disables {sorted(dropped)} too: add them to"
            " PLAYWRIGHT_DISABLED_FEATURES in tests/support/chromium.py"
        )
    return browser
