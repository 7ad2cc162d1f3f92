"""A lean HTTP/1.1 client for the benches' raters: keep-alive connections on asyncio streams, GET and
POST with a JSON body, answers read by Content-Length or chunks, cookies kept from Set-Cookie (by name:
one site, one path). Nothing else (no TLS, no redirects, no compression).

Why not httpx: at 1,000 raters httpx spent about 5 ms of CPU per rated item on the same two cores the
server runs on (0.26 of a core at 50 items/s), so the load generator took CPU from the system it
measures; at saturation it took the cores from the fastest system most. This client spends a fraction
of that; the server sees the same requests.

    async with LeanClient("http://127.0.0.1:8000", cookies={...}, headers={...}, timeout=30) as client:
        resp = await client.post("/api/studies/x/rate/next/", json=None)
        resp.status_code, resp.json()
"""

from __future__ import annotations

import asyncio
import json
import time
from email.utils import parsedate_to_datetime
from http.cookies import SimpleCookie
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
        self.cookies = dict(cookies)
        fixed = {"Host": parts.netloc, "Accept": "application/json", **headers}
        self._head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())
        self._cookie_line = ""
        self._set_cookie_line()
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    def _set_cookie_line(self) -> None:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self._cookie_line = f"Cookie: {cookie}\r\n" if cookie else ""

    async def __aenter__(self) -> LeanClient:
        return self

    async def __aexit__(self, *exc) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def get(self, path: str, *, headers: dict[str, str] | None = None) -> LeanResponse:
        return await self._send(f"GET {path} HTTP/1.1\r\n{self._head}{self._cookie_line}{_lines(headers)}\r\n".encode())

    async def post(self, path: str, *, json: dict | None = None,  # noqa: A002 (httpx's name)
                   headers: dict[str, str] | None = None) -> LeanResponse:
        body = b"" if json is None else _dumps(json)
        return await self._send((f"POST {path} HTTP/1.1\r\n{self._head}{self._cookie_line}{_lines(headers)}"
                                 f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                                + body)

    async def _send(self, request: bytes) -> LeanResponse:
        conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), self.timeout)
            reader, writer = conn
            writer.write(request)
            status, content, keep, set_cookies = await asyncio.wait_for(_read_answer(reader), self.timeout)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
            if conn is not None:
                conn[1].close()
            raise LeanTransportError(f"{type(exc).__name__}: {exc}") from exc
        if keep:
            self._idle.append(conn)
        else:
            writer.close()
        if set_cookies:
            self._keep_cookies(set_cookies)
        return LeanResponse(status, content)

    def _keep_cookies(self, set_cookies: list[str]) -> None:
        for line in set_cookies:
            for name, morsel in SimpleCookie(line).items():
                if _expired(morsel):
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.coded_value
        self._set_cookie_line()


def _expired(morsel) -> bool:
    """A Set-Cookie that deletes its cookie: Max-Age 0 or less, or an Expires in the past (as servers delete)."""
    if morsel["max-age"]:
        return int(morsel["max-age"]) <= 0
    if morsel["expires"]:
        try:
            return parsedate_to_datetime(morsel["expires"]).timestamp() <= time.time()
        except (TypeError, ValueError):
            return False
    return False


def _lines(headers: dict[str, str] | None) -> str:
    return "".join(f"{k}: {v}\r\n" for k, v in headers.items()) if headers else ""


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool, list[str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers, set_cookies = {}, []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "set-cookie":
                set_cookies.append(value.strip())
            else:
                headers[name] = value.strip()
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
        return status, await reader.read(), False, set_cookies
    return status, content, headers.get("connection", "").lower() != "close", set_cookies
