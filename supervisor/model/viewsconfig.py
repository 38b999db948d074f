"""`[views]` and the per-app `approval` policy: what an app view opened in the control page may do
without asking, as plain data."""

from __future__ import annotations

from typing import Literal

import attrs

from supervisor.model.policy import Count, Seconds

# Whose tool calls from a view wait for the person: none, those of tools that are not marked
# `readOnlyHint: true`, or all.
Approval = Literal["never", "writes", "always"]


@attrs.frozen(kw_only=True)
class ViewsConfig:
    """`[views]`: what a view opened in the control page may do."""

    lease_s: Seconds = 600.0  # a view not used (or kept alive) this long is gone
    max_in_flight: Count = 4  # requests of one view being answered at once
    max_requests: Count = 120  # requests of one view per window
    max_tool_calls: Count = 30  # tool calls of one view per window
    window_s: Seconds = 60.0  # the window of the two limits above
    approval_timeout_s: Seconds = 120.0  # a call waiting longer for the person is denied
