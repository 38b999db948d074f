"""`${env:NAME}` references in manifest header and environment values.

Definitions keep the references as written, so secrets never show up in listings; they are checked
when an app is validated and expanded only when its process or HTTP client is made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\{env:([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def reference_problems(value: str, environ: Mapping[str, str]) -> list[str]:
    """Why the references in `value` cannot be expanded (empty when they all can)."""
    found = []
    for match in _REFERENCE.finditer(value):
        name = match.group(1)
        if not _NAME.fullmatch(name):
            found.append(
                f"'{match.group(0)}' is not a valid reference:"
                " write ${env:NAME} with a variable name of letters, digits and '_'"
            )
        elif name not in environ:
            found.append(
                f"refers to ${{env:{name}}}, but {name} is not set in the environment mcpapps"
                " runs in: set it there, or remove the reference"
            )
    return found


def expand(value: str, environ: Mapping[str, str]) -> str:
    """`value` with every `${env:NAME}` replaced; call only after `reference_problems` is empty."""
    return _REFERENCE.sub(lambda m: environ[m.group(1)], value)
