"""What `/apps/mcp/<appId>` tells its clients the app can do (pure)."""

from __future__ import annotations

from actors.catalog import Catalog
from supervisor.model.era import Era
from web.mcpdoor.endpoints import mirrored_capabilities


def test_the_apps_own_capabilities_with_list_changes() -> None:
    declared = {"tools": {}, "prompts": {"listChanged": False}, "extensions": {"x": {}}}
    caps = mirrored_capabilities(Catalog(capabilities=declared))
    assert caps == {
        "tools": {"listChanged": True},
        "prompts": {"listChanged": True},
        "extensions": {"x": {}},
    }
    assert "logging" not in caps  # never announced for an app that has none
    assert declared["prompts"] == {"listChanged": False}  # the catalog's copy is untouched


def test_resources_of_a_2026_app_can_be_subscribed_to() -> None:
    declared = {"resources": {"listChanged": False}, "logging": {}}
    assert mirrored_capabilities(Catalog(capabilities=declared, era=Era.STATELESS)) == {
        "resources": {"listChanged": True, "subscribe": True},
        "logging": {},
    }
    handshake = mirrored_capabilities(Catalog(capabilities=declared))
    assert "subscribe" not in handshake["resources"]  # the app's own answer decides
