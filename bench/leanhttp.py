"""A lean HTTP/1.1 client for the 1,000-rater bench: keep-alive connections on asyncio streams, POST
with a JSON body, answers read by Content-Length or chunks. Nothing else (no TLS, no redirects).

Why not httpx: at 1,000 raters httpx spent about 5 ms of CPU per rated item on the same two cores the
server runs on (0.26 of a core at 50 items/s), so the load generator took CPU from the system it
measures. This client spends a fraction of that; the server sees the same requests.

    async with LeanClient("http://127.0.0.1:8000", cookies={...}, headers={...}, timeout=30) as client:
        resp = await client.post("/api/studies/x/rate/next/", json=None)
        resp.status_code, resp.json()
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlsplit

import httpx


class LeanTransportError(httpx.TransportError):
    """The connection failed, closed mid-answer or timed out (an httpx.TransportError, so that the
    bench's raters handle it as they handle httpx's)."""


class LeanResponse:
    __slots__ = ("status_code", "content")

    def __init__(self, status_code: int, content: bytes):
        self.status_code, self.content = status_code, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)


class LeanClient:
    def __init__(self, base: str, *, cookies: dict[str, str], headers: dict[str, str], timeout: float):
        parts = urlsplit(base)
        self.host, self.port, self.timeout = parts.hostname, parts.port or 80, timeout
        cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
        fixed = {"Host": parts.netloc, "Cookie": cookie, "Accept": "application/json", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def __aenter__(self) -> LeanClient:
        return self

    async def __aexit__(self, *exc) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def post(self, path: str, *, json: dict | None = None) -> LeanResponse:  # noqa: A002 (httpx's name)
        body = b"" if json is None else _dumps(json)
        request = (f"POST {path} HTTP/1.1\r\n{self._head}Content-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), self.timeout)
            reader, writer = conn
            writer.write(request)
            status, content, keep = await asyncio.wait_for(_read_answer(reader), self.timeout)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            if conn is not None:
                conn[1].close()
            raise LeanTransportError(f"{type(exc).__name__}: {exc}") from exc
        if keep:
            self._idle.append(conn)
        else:
            writer.close()
        return LeanResponse(status, content)


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        content = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)  # the chunk and its CRLF
            if size == 0:
                break
            chunks.append(chunk[:-2])
        content = b"".join(chunks)
    else:  # no length: the answer ends with the connection
        return status, await reader.read(), False
    return status, content, headers.get("connection", "").lower() != "close"
