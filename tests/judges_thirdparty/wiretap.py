"""A pass-through HTTP proxy that records what the real server answered: each completion's request
body and the `usage` the server put in its response. The tests compare Concord's stored tokens
and cost with these numbers, which Concord's own code never touched."""
from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import httpx


@dataclass
class Exchange:
    path: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any] | None

    @property
    def usage(self) -> dict[str, int]:
        return (self.response or {}).get("usage") or {}


@dataclass
class Tap:
    base_url: str
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def completions(self) -> list[Exchange]:
        with self.lock:
            return [e for e in self.exchanges if e.path.endswith("completions")]

    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens the server reported over every successful completion."""
        done = [e for e in self.completions() if e.status == 200]
        return (sum(e.usage.get("prompt_tokens", 0) for e in done),
                sum(e.usage.get("completion_tokens", 0) for e in done))


@contextlib.contextmanager
def wiretap(upstream: str) -> Iterator[Tap]:
    """A proxy on 127.0.0.1 (free port) in front of `upstream` (…/v1); yields its Tap."""
    client = httpx.Client(timeout=300)
    root = upstream.rstrip("/").removesuffix("/v1")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _forward(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            resp = client.request(method, root + self.path, content=body,
                                  headers={"Content-Type": self.headers.get("Content-Type", "application/json")})
            if method == "POST":
                try:
                    answer = resp.json()
                except ValueError:
                    answer = None
                with tap.lock:
                    tap.exchanges.append(Exchange(self.path, json.loads(body or b"{}"), resp.status_code, answer))
            self.send_response(resp.status_code)
            self.send_header("Content-Type", resp.headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(resp.content)))
            self.end_headers()
            self.wfile.write(resp.content)

        def do_GET(self) -> None:
            self._forward("GET")

        def do_POST(self) -> None:
            self._forward("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tap = Tap(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tap
    finally:
        server.shutdown()
        server.server_close()
        client.close()
