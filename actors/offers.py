"""What `/mcp` offers besides tools: the prompts, resources and resource templates of every
Running app, under the same public naming as its tools (pure functions over the catalogs).

- A prompt's public name is the app's `toolNamePrefix` + its name, as for a tool; `prompts/get`
  maps it back.
- Resources and templates keep their URIs: a URI is what the app's own content links to (a tool
  result's `resource_link`, a UI's `ui://` link), so rewriting it would break those links. Their
  `name` gets the prefix. `resources/read` finds the app by the URI: first the listed resources,
  then the templates, each matched by its shape (`{var}` one path segment, `{+var}` anything).
- Collisions are handled as for tools: the app discovered first (the apps come in discovery
  order) keeps a public name, URI or URI template; the other's entry is left out with a warning
  naming both apps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

Wire = dict[str, Any]


@attrs.frozen
class AppOffers:
    """The input for one app: its id, prefix and raw listings, in registration order."""

    app_id: str
    prefix: str
    prompts: tuple[Wire, ...] = ()
    resources: tuple[Wire, ...] = ()
    resource_templates: tuple[Wire, ...] = ()


@attrs.frozen
class PublicPrompt:
    public_name: str
    app_id: str
    name: str  # the app's own
    listing: Wire  # as /mcp lists it


@attrs.frozen
class PublicResource:
    uri: str
    app_id: str
    listing: Wire


@attrs.frozen
class PublicTemplate:
    uri_template: str
    app_id: str
    listing: Wire


@attrs.frozen
class Offers:
    prompts: tuple[PublicPrompt, ...] = ()
    resources: tuple[PublicResource, ...] = ()
    templates: tuple[PublicTemplate, ...] = ()
    warnings: dict[str, tuple[str, ...]] = attrs.Factory(dict)  # app id → warnings

    def prompt(self, public_name: str) -> PublicPrompt | None:
        return next((p for p in self.prompts if p.public_name == public_name), None)

    def owner_of(self, uri: str) -> str | None:
        """The app that serves `uri`: a listed resource first, then a template's shape."""
        for resource in self.resources:
            if resource.uri == uri:
                return resource.app_id
        for template in self.templates:
            if template_pattern(template.uri_template).fullmatch(uri):
                return template.app_id
        return None


_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_OPERATORS: Mapping[str, str] = {
    "": r"[^/?#]*",  # {var}: one segment, reserved characters percent-encoded
    "+": r"[^#]*",  # {+var}: reserved characters allowed
    "#": r"(?:#.*)?",
    ".": r"(?:\.[^/?#]*)*",
    "/": r"(?:/[^/?#]*)*",
    ";": r"(?:;[^/?#]*)*",
    "?": r"(?:\?[^#]*)?",
    "&": r"(?:&[^#]*)*",
}


def template_pattern(uri_template: str) -> re.Pattern[str]:
    """A regular expression for the URIs an RFC 6570 template can expand to (by shape: values
    are not checked)."""
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(uri_template):
        parts.append(re.escape(uri_template[last : match.start()]))
        expression = match.group(1)
        operator = expression[:1] if expression[:1] in _OPERATORS else ""
        parts.append(_OPERATORS[operator])
        last = match.end()
    parts.append(re.escape(uri_template[last:]))
    return re.compile("".join(parts))


def build_offers(apps: Iterable[AppOffers]) -> Offers:
    """Every prompt, resource and template of `apps`, in discovery order: the first app to
    offer a public name, URI or URI template keeps it."""
    prompts: dict[str, PublicPrompt] = {}
    resources: dict[str, PublicResource] = {}
    templates: dict[str, PublicTemplate] = {}
    warnings: dict[str, list[str]] = {}
    for app in apps:
        said = warnings.setdefault(app.app_id, [])
        for raw in app.prompts:
            name = raw.get("name")
            if not isinstance(name, str):
                continue
            public = app.prefix + name
            if (owner := prompts.get(public)) is not None:
                said.append(_taken("prompt", public, app.app_id, owner.app_id, prefix=True))
                continue
            prompts[public] = PublicPrompt(public, app.app_id, name, {**raw, "name": public})
        for raw in app.resources:
            uri = raw.get("uri")
            if not isinstance(uri, str):
                continue
            if (taken := resources.get(uri)) is not None:
                said.append(_taken("resource", uri, app.app_id, taken.app_id))
                continue
            resources[uri] = PublicResource(uri, app.app_id, _prefixed(raw, app.prefix))
        for raw in app.resource_templates:
            template = raw.get("uriTemplate")
            if not isinstance(template, str):
                continue
            if (held := templates.get(template)) is not None:
                said.append(_taken("resource template", template, app.app_id, held.app_id))
                continue
            templates[template] = PublicTemplate(template, app.app_id, _prefixed(raw, app.prefix))
    return Offers(
        prompts=tuple(prompts.values()),
        resources=tuple(resources.values()),
        templates=tuple(templates.values()),
        warnings={app: tuple(w) for app, w in warnings.items() if w},
    )


def _prefixed(raw: Wire, prefix: str) -> Wire:
    name = raw.get("name")
    return {**raw, "name": prefix + name} if isinstance(name, str) else dict(raw)


def _taken(kind: str, key: str, app_id: str, owner: str, *, prefix: bool = False) -> str:
    fix = (
        f"; set tool_name_prefix in [apps.entries.{app_id}] to tell them apart"
        if prefix
        else " (URIs are offered unchanged)"
    )
    return (
        f"{kind} '{key}' of app '{app_id}' is not offered on /mcp: app '{owner}' already"
        f" offers one{fix}"
    )
