"""bench/leanhttp.py against a real HTTP/1.1 server (the standard library's): JSON bodies, keep-alive,
answers by Content-Length and by chunks, GET, per-request headers, cookies kept from Set-Cookie as a
browser keeps them, and a refused connection as a transport error; the peers' drivers' measured client."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from bench.leanhttp import LeanClient, LeanTransportError
from bench.peers import measured_client


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


    def do_GET(self):  # noqa: N802
        """Sets the cookies its query names (`name=value`, or `name=` to delete one as Django does) and
        echoes what came."""
        Echo.connections.add(self.client_address)
        answer = json.dumps({"cookie": self.headers["Cookie"], "nav": self.headers["X-Nav"],
                             "accept": self.headers["Accept"], "path": self.path}).encode()
        self.send_response(200)
        for name, value in parse_qsl(urlsplit(self.path).query, keep_blank_values=True):
            if value:
                self.send_header("Set-Cookie", f"{name}={value}; Path=/; HttpOnly; SameSite=Lax")
            else:
                self.send_header("Set-Cookie", f'{name}=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/')
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


def test_get_with_its_own_headers_and_cookies_kept_and_deleted_as_set(server):
    async def run():
        async with LeanClient(server, cookies={"sessionid": "s1", "old": "o"}, headers={}, timeout=5) as client:
            first = await client.get("/page?csrftoken=abc&sessionid=s2&old=", headers={"X-Nav": "1"})
            second = await client.get("/page")
            return first, second, dict(client.cookies)

    first, second, kept = asyncio.run(run())
    assert first.json() == {"cookie": "sessionid=s1; old=o", "nav": "1", "accept": "application/json",
                            "path": "/page?csrftoken=abc&sessionid=s2&old="}
    assert kept == {"sessionid": "s2", "csrftoken": "abc"}
    assert second.json()["cookie"] == "sessionid=s2; csrftoken=abc" and second.json()["nav"] is None


def test_a_peer_rater_signed_in_with_httpx_is_measured_with_its_cookies_and_headers(server):
    async def run():
        async with httpx.AsyncClient(base_url=server, timeout=5) as signed_in:
            await signed_in.get("/signup?sessionid=peer-session&csrftoken=tok")
            signed_in.headers.update({"X-Nav": "from-driver"})
            async with measured_client(signed_in, lean=True, headers=("X-Nav",), timeout=5) as lean:
                assert isinstance(lean, LeanClient)
                lean_answer = await lean.get("/annotate")
            async with measured_client(signed_in, lean=False, timeout=5) as same:
                assert same is signed_in
            return lean_answer

    answer = asyncio.run(run())
    assert answer.json()["cookie"] == "sessionid=peer-session; csrftoken=tok"
    assert answer.json()["nav"] == "from-driver" and answer.json()["accept"] == "*/*"
