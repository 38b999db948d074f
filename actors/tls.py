"""The TLS settings of every HTTP client the supervisor makes, built once per process.

They are httpx2's own defaults (`httpx2.create_ssl_context()`: the system's CA store, with
`SSL_CERT_FILE`/`SSL_CERT_DIR` honoured), which a client builds afresh unless it is given
them. Building them reads the whole CA store, about 50 ms of CPU: a client made for each chat
turn or each app connection paid that every time, for a context that never differs. The
context is shared read-only (every client here speaks HTTP/1.1, so the ALPN list httpx2 sets on
it is always the same).
"""

from __future__ import annotations

import functools
import ssl

import httpx2


@functools.cache
def client_tls() -> ssl.SSLContext:
    return httpx2.create_ssl_context()
