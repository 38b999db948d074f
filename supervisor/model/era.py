"""The protocol era: which of MCP's two ways of talking a connection uses.

- `Era.HANDSHAKE`: `initialize` first, then one long-lived session on which the server may ask
  the client (sampling, elicitation) and notify it unasked; the revisions before 2026-07-28.
- `Era.STATELESS`: 2026-07-28, `server/discover` instead of the handshake; each request stands
  alone and carries its own envelope in `_meta`, a server asks by answering `input_required`,
  and change notifications come only on a `subscriptions/listen` stream.

`Era` is what a connection speaks (an app's session, a client's request); `EraSetting` is what
the config asks an app to be spoken to in, which may also be "auto" (the handshake if the app
offers it, else stateless). The values are the config's words, so `Era(setting)` is the era a
setting other than "auto" pins.
"""

from __future__ import annotations

import enum
from typing import Literal

EraSetting = Literal["auto", "handshake", "stateless"]


class Era(enum.Enum):
    HANDSHAKE = "handshake"
    STATELESS = "stateless"
