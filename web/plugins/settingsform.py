"""An app's structured settings as the host reads, shows and checks them (pure).

The read tool answers `{schema, values, layout?}`: `schema` an object schema whose properties
are primitive settings only (boolean; string with enum, minLength, maxLength, pattern; number
and integer with minimum, maximum, multipleOf), `values` a value for each, `layout` groups of
properties and tool actions. A schema with anything else is refused as a whole, naming the
setting: a control page that showed the rest would hide a setting the app relies on.

A change is checked here against the schema before the app sees it, one setting at a time, so
that the refusal names the setting; only the settings whose value differs are sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import jsonschema

from actors.catalog import Catalog, Wire
from supervisor.model.errors import BadRequest, UnusableAnswer
from supervisor.model.structuring import show
from web.plugins.offers import has_view, result_text, tool_named, tool_title

TYPES = ("boolean", "string", "number", "integer")
# The keywords a setting's schema may use; anything else would be a rule the page cannot show.
_KEYWORDS = {
    "boolean": {"type", "title", "description"},
    "string": {"type", "title", "description", "enum", "minLength", "maxLength", "pattern"},
    "number": {"type", "title", "description", "minimum", "maximum", "multipleOf"},
    "integer": {"type", "title", "description", "minimum", "maximum", "multipleOf"},
}
# Keywords that only annotate (or that the SDKs add) and change nothing about what is valid.
_HARMLESS = {"default", "examples", "$comment", "readOnly", "writeOnly", "deprecated", "format"}
OTHER_GROUP = "Other settings"


class UnusableSettings(UnusableAnswer):
    """The app's settings cannot be shown: its read tool failed, or answered with something
    that is not settings, or with a setting of a kind the host has no control for."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="unusable_settings")


class BadSetting(BadRequest):
    """A value the person asked for that the setting's schema does not allow (or no such
    setting): `field` names it."""

    def __init__(self, message: str, field: str | None) -> None:
        data = {"field": field} if field is not None else None
        super().__init__(message, code="bad_setting", data=data)
        self.field = field


@attrs.frozen
class Settings:
    properties: Mapping[str, Wire]
    values: Mapping[str, Any]
    layout: tuple[Wire, ...]
    problems: tuple[str, ...] = ()  # what the app got wrong that did not stop the page


def read_settings(app_id: str, tool: str, result: Wire) -> Settings:
    """The read tool's result, checked; `UnusableSettings` says what is wrong."""
    where = f"app '{app_id}' answered its settings read tool '{tool}'"
    if result.get("isError"):
        raise UnusableSettings(
            f"{where} with an error: {result_text(result) or 'no details given'}"
        )
    data = result.get("structuredContent")
    if not isinstance(data, Mapping):
        raise UnusableSettings(f"{where} with no structuredContent object")
    schema, values = data.get("schema"), data.get("values")
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise UnusableSettings(f"{where} with no 'schema' of type \"object\"")
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise UnusableSettings(f"{where} with a schema whose 'properties' is not an object")
    if not isinstance(values, Mapping):
        raise UnusableSettings(f"{where} with no 'values' object")
    for name, setting in properties.items():
        problem = setting_problem(setting)
        if problem is not None:
            raise UnusableSettings(
                f"app '{app_id}' has a setting the control page cannot show: '{name}' {problem}"
            )
    layout = data.get("layout") or []
    if not isinstance(layout, list):
        raise UnusableSettings(f"{where} with a 'layout' that is not a list")
    problems = [
        f"setting '{name}' has no value in 'values'" for name in properties if name not in values
    ]
    return Settings(dict(properties), dict(values), tuple(layout), tuple(problems))


def setting_problem(setting: Any) -> str | None:
    """Why a setting's schema is not one of the primitive kinds, or None."""
    if not isinstance(setting, Mapping):
        return f"is {show(setting)}, not a schema object"
    kind = setting.get("type")
    if kind not in TYPES:
        return f"has type {show(kind)}: settings may be {', '.join(TYPES)} only"
    extra = sorted(set(setting) - _KEYWORDS[kind] - _HARMLESS)
    if extra:
        return f"({kind}) uses '{extra[0]}', which a {kind} setting cannot have"
    enum = setting.get("enum")
    if enum is not None and (
        not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum)
    ):
        return "has an 'enum' that is not a list of strings"
    multiple = setting.get("multipleOf")
    if multiple is not None and not (_is_number(multiple) and multiple > 0):
        return "has a 'multipleOf' that is not a positive number"
    try:
        jsonschema.Draft202012Validator.check_schema(dict(setting))
    except jsonschema.SchemaError as error:
        return f"has a schema that is not valid: {error.message}"
    return None


def page(app_id: str, settings: Settings, catalog: Catalog) -> dict[str, Any]:
    """The settings as the control page shows them: the layout's groups in order, each item a
    property (its schema and value) or a tool action (title, whether it opens a view); then
    "Other settings" for the properties no group lists."""
    problems = list(settings.problems)
    placed: set[str] = set()
    groups: list[dict[str, Any]] = []
    for index, group in enumerate(settings.layout):
        if not isinstance(group, Mapping) or not isinstance(group.get("items"), list):
            problems.append(f"layout[{index}] is not a group with 'items': left out")
            continue
        items = []
        for item in group["items"]:
            shown = _item(app_id, item, settings, catalog, placed, problems)
            if shown is not None:
                items.append(shown)
        title = group.get("title")
        groups.append({"title": title if isinstance(title, str) else "", "items": items})
    rest = [_property(name, settings) for name in settings.properties if name not in placed]
    if rest:
        groups.append({"title": OTHER_GROUP, "items": rest})
    return {"app": app_id, "values": dict(settings.values), "groups": groups, "problems": problems}


def _item(
    app_id: str,
    item: Any,
    settings: Settings,
    catalog: Catalog,
    placed: set[str],
    problems: list[str],
) -> dict[str, Any] | None:
    kind = item.get("kind") if isinstance(item, Mapping) else None
    if kind == "property":
        name = item.get("property")
        if name not in settings.properties or name in placed:
            problems.append(
                f"the layout lists {show(name)}, which is no setting or is listed twice"
            )
            return None
        placed.add(name)
        return _property(name, settings)
    if kind == "tool":
        tool = tool_named(catalog, item.get("tool"))
        if tool is None:
            problems.append(
                f"the layout names tool {show(item.get('tool'))}, which app"
                f" '{app_id}' does not have"
            )
            return None
        action = {"kind": "tool", "tool": tool["name"], "title": tool_title(tool)}
        if isinstance(item.get("description"), str):
            action["description"] = item["description"]
        return {**action, "view": has_view(tool)}
    problems.append(f"the layout has an item of kind {show(kind)}: left out")
    return None


def _property(name: str, settings: Settings) -> dict[str, Any]:
    schema = settings.properties[name]
    return {
        "kind": "property",
        "property": name,
        "schema": dict(schema),
        "value": settings.values.get(name),
    }


def layout_tools(settings: Settings) -> set[str]:
    """The tools the layout offers as actions: the only ones the settings page may run."""
    return {
        item["tool"]
        for group in settings.layout
        if isinstance(group, Mapping) and isinstance(group.get("items"), list)
        for item in group["items"]
        if isinstance(item, Mapping) and item.get("kind") == "tool"
        if isinstance(item.get("tool"), str)
    }


def changes(settings: Settings, wanted: Any) -> dict[str, Any]:
    """The settings of `wanted` whose value differs from the current one, each checked against
    its schema; `BadSetting` names the first that is wrong."""
    if not isinstance(wanted, Mapping) or not wanted:
        raise BadSetting("'set' must be an object of at least one setting and its new value", None)
    changed: dict[str, Any] = {}
    for name, value in wanted.items():
        schema = settings.properties.get(name)
        if schema is None:
            known = ", ".join(settings.properties) or "none"
            raise BadSetting(f"there is no setting '{name}' (the settings are: {known})", name)
        validator = jsonschema.Draft202012Validator(dict(schema))
        error = next(iter(validator.iter_errors(value)), None)
        if error is not None:
            title = schema.get("title")
            named = f"'{name}' ({title})" if isinstance(title, str) and title else f"'{name}'"
            raise BadSetting(f"setting {named} cannot be {show(value)}: {error.message}", name)
        if not _same(value, settings.values.get(name)):
            changed[name] = value
    return changed


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
