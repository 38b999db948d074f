"""What an app offers, as values: `Wire` (a JSON object as it crosses the wire) and `Catalog`.
Pure: the messages carry these, and importing them must not load the SDK."""

from __future__ import annotations

from typing import Any

import attrs

from supervisor.model.era import Era

Wire = dict[str, Any]


@attrs.frozen
class Catalog:
    """What an app offers, in wire form, every page enumerated."""

    tools: tuple[Wire, ...] = ()
    resources: tuple[Wire, ...] = ()
    resource_templates: tuple[Wire, ...] = ()
    prompts: tuple[Wire, ...] = ()
    capabilities: Wire = attrs.Factory(dict)  # the app's, as it declared them
    era: Era = Era.HANDSHAKE  # the era the app speaks

    def counts(self) -> dict[str, int]:
        return {
            "tools": len(self.tools),
            "resources": len(self.resources),
            "resource_templates": len(self.resource_templates),
            "prompts": len(self.prompts),
        }
