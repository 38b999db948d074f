"""Allow/deny glob matching: shell-style, anywhere in the pattern, case-insensitive."""

from __future__ import annotations

import string

from hypothesis import assume, given
from hypothesis import strategies as st

from supervisor.model.config import AppEntry, AppsConfig
from supervisor.model.filters import disabled_reason, glob_match

IDS = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,30}\Z")


def swapcase_some(text: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if flip else c for c, flip in zip(text, flips, strict=False))


@given(IDS, st.lists(st.booleans(), min_size=31, max_size=31))
def test_an_id_matches_itself_in_any_case(app_id: str, flips: list[bool]) -> None:
    assert glob_match(swapcase_some(app_id, flips), app_id)
    assert glob_match(app_id, swapcase_some(app_id, flips))


@given(IDS)
def test_a_star_matches_every_id(app_id: str) -> None:
    assert glob_match("*", app_id)


@given(IDS, st.integers(min_value=0, max_value=31), st.integers(min_value=0, max_value=31))
def test_a_star_anywhere_matches_what_it_replaces(app_id: str, start: int, end: int) -> None:
    start, end = sorted((min(start, len(app_id)), min(end, len(app_id))))
    assert glob_match(app_id[:start] + "*" + app_id[end:], app_id)


@given(IDS, st.data())
def test_question_marks_match_exactly_one_character(app_id: str, data: st.DataObject) -> None:
    positions = data.draw(st.sets(st.integers(min_value=0, max_value=len(app_id) - 1)))
    pattern = "".join("?" if i in positions else c for i, c in enumerate(app_id))
    assert glob_match(pattern, app_id)
    assert not glob_match(pattern + "?", app_id)
    assert not glob_match(pattern, app_id + "x")


@given(IDS, st.data())
def test_a_character_class_matches_its_members_only(app_id: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(min_value=0, max_value=len(app_id) - 1))
    others = data.draw(st.text(alphabet=string.ascii_lowercase + string.digits, max_size=3))
    member = app_id[i]
    pattern_with = app_id[:i] + "[" + others + member + "]" + app_id[i + 1 :]
    assert glob_match(pattern_with, app_id)
    outsiders = "".join(c for c in others if c.lower() != member.lower())
    assume(outsiders)
    pattern_without = app_id[:i] + "[" + outsiders + "]" + app_id[i + 1 :]
    assert not glob_match(pattern_without, app_id)
    assert not glob_match(app_id[:i] + "[!" + others + member + "]" + app_id[i + 1 :], app_id)


@given(IDS, IDS)
def test_a_pattern_without_wildcards_matches_only_that_id(pattern: str, app_id: str) -> None:
    assert glob_match(pattern, app_id) == (pattern.lower() == app_id.lower())


@given(IDS, st.lists(IDS, max_size=3), st.lists(IDS, max_size=3))
def test_deny_always_beats_allow(app_id: str, allow: list[str], deny: list[str]) -> None:
    apps = AppsConfig(allow=(*allow, "*", app_id), deny=(*deny, app_id.upper()))
    first_match = next(p for p in apps.deny if glob_match(p, app_id))
    assert disabled_reason(app_id, apps) == f"matches deny pattern '{first_match}'"


def test_a_range_keeps_its_meaning_when_case_is_ignored() -> None:
    # [A-F] must not turn into [a-f] only, nor [Z-a] into the empty range [z-a].
    assert glob_match("[A-F]x", "cx")
    assert glob_match("[a-f]x", "CX")
    assert glob_match("[Z-a]", "_")
    assert not glob_match("[A-F]x", "gx")


def test_the_order_of_checks() -> None:
    apps = AppsConfig(
        allowlist_semantics="strict",
        allow=("keep-*",),
        deny=("x*",),
        entries={"xoff": AppEntry(enabled=False)},
    )
    assert disabled_reason("xoff", apps) == "disabled in config entries"
    assert disabled_reason("xray", apps) == "matches deny pattern 'x*'"
    assert disabled_reason("other", apps) == "not in the allowlist"
    assert disabled_reason("Keep-Me", apps) is None
