"""Keep-alive: an app that has been quiet for `ping_interval_s` is probed; `ping_misses` probes
in a row without an answer mean it is hung, which is handled as a crash. Any answer, even an
error, proves the app alive; a timeout does not.
"""

from __future__ import annotations

import logging

import trio

from actors.apps.death import Hung
from actors.apps.upstream import Upstream
from supervisor.model.errors import UpstreamLost, UpstreamTimeout
from supervisor.model.policy import SupervisionPolicy

logger = logging.getLogger("mcpapps.app")


class Heard:
    """When an app last proved it is alive (trio time): an answer of any kind."""

    def __init__(self) -> None:
        self.at = 0.0

    def now(self) -> None:
        self.at = trio.current_time()


async def keep_alive(
    app_id: str, upstream: Upstream, policy: SupervisionPolicy, heard: Heard
) -> Hung:
    """Probe the app while it lives; return why it is hung once it is. A broken connection
    raises (`UpstreamLost`)."""
    misses = 0
    while True:
        await trio.sleep_until(heard.at + policy.ping_interval_s)
        if trio.current_time() < heard.at + policy.ping_interval_s:
            continue  # a call answered meanwhile: the app is alive
        missed = False
        with trio.move_on_after(policy.ping_timeout_s + 1.0) as probe:
            try:
                await upstream.probe(policy.ping_timeout_s)
            except UpstreamLost:
                raise
            except UpstreamTimeout:
                missed = True
            except Exception:
                pass  # an answer, even an error: the app is alive
        if missed or probe.cancelled_caught:
            misses += 1
            logger.warning(
                "app %s: no answer to a ping within %g s (%d of %d)",
                app_id,
                policy.ping_timeout_s,
                misses,
                policy.ping_misses,
            )
            if misses >= policy.ping_misses:
                return Hung(misses, policy.ping_timeout_s)
            heard.at = trio.current_time() - policy.ping_interval_s  # probe again now
        else:
            misses = 0
            heard.now()
