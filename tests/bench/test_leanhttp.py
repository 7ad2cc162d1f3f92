"""bench/leanhttp.py against a real HTTP/1.1 server (the standard library's): JSON bodies, keep-alive,
answers by Content-Length and by chunks, and a refused connection as a transport error."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from bench.leanhttp import LeanClient, LeanTransportError


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    connections: set = set()

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 (the standard library's name)
        Echo.connections.add(self.client_address)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = json.dumps({"got": json.loads(body) if body else None, "cookie": self.headers["Cookie"],
                             "csrf": self.headers["X-CSRFToken"], "path": self.path}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        if self.path.endswith("chunked/"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (answer[:7], answer[7:]):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    Echo.connections = set()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_posts_json_and_reads_both_kinds_of_answer_on_one_connection(server):
    async def run():
        async with LeanClient(server, cookies={"sessionid": "s1", "csrftoken": "c1"},
                              headers={"X-CSRFToken": "c1"}, timeout=5) as client:
            first = await client.post("/api/next/")
            second = await client.post("/api/submit/chunked/", json={"answers": {"1": "ä"}})
            return first, second

    first, second = asyncio.run(run())
    assert first.status_code == second.status_code == 201
    assert first.json() == {"got": None, "cookie": "sessionid=s1; csrftoken=c1", "csrf": "c1", "path": "/api/next/"}
    assert second.json()["got"] == {"answers": {"1": "ä"}} and second.json()["path"] == "/api/submit/chunked/"
    assert len(Echo.connections) == 1  # kept alive


def test_two_requests_at_once_take_two_connections(server):
    async def run():
        async with LeanClient(server, cookies={}, headers={"X-CSRFToken": "x"}, timeout=5) as client:
            return await asyncio.gather(client.post("/a/", json={"n": 1}), client.post("/b/", json={"n": 2}))

    answers = asyncio.run(run())
    assert [a.json()["got"]["n"] for a in answers] == [1, 2]
    assert len(Echo.connections) == 2


def test_a_refused_connection_is_a_transport_error_as_httpx_s():
    async def run():
        async with LeanClient("http://127.0.0.1:9", cookies={}, headers={}, timeout=2) as client:
            await client.post("/")

    with pytest.raises(LeanTransportError) as caught:
        asyncio.run(run())
    assert isinstance(caught.value, httpx.TransportError)
