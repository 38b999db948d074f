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
    # Who the app says it is (`serverInfo`: name, version, icons …), {} when it did not say.
    server_info: Wire = attrs.Factory(dict)

    def counts(self) -> dict[str, int]:
        return {
            "tools": len(self.tools),
            "resources": len(self.resources),
            "resource_templates": len(self.resource_templates),
            "prompts": len(self.prompts),
        }

    def summary(self) -> str:
        """The counts in words, as the log says them: "1 tool, 0 resources, ..."."""
        nouns = {"tools": "tool", "resources": "resource"}
        nouns |= {"resource_templates": "template", "prompts": "prompt"}
        return ", ".join(_count(n, nouns[key]) for key, n in self.counts().items())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
