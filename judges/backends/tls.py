"""The TLS settings every judge HTTP client shares.

httpx builds a new SSL context for each client it makes, reading the whole CA bundle: about 20 ms of CPU, paid
by each chunk of a judge run (a client a chunk) and each batch API call, more than the chunk's requests to a
local server cost. One context, built once per process the first time a client needs it, serves them all; it
honours SSL_CERT_FILE and SSL_CERT_DIR as httpx's own default does."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()
