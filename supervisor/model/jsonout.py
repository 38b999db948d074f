"""JSON we send out (event-stream frames, saved sessions, route answers): never NaN or Infinity.

Python's json module writes a float that is not finite as `NaN` or `Infinity`, which no JSON
parser reads (a browser's JSON.parse throws, and a saved session holding one would break its
page on every load). What we refuse at the door cannot reach here, but an app's result can hold
such a float (the SDK reads one from the app). It is written as `null`, as the SDK and a
browser's JSON.stringify write it. The common case costs one encoding: the value is only walked
when the encoder refused it.
"""

from __future__ import annotations

import json
import math
from typing import Any


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps(value, **options)`, with every float that is not finite written as null."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **options)


def finite(value: Any) -> Any:
    """`value` with every float that is not finite replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value
