"""The HAProxy configuration that bench/nodes.py runs and docs/how-to/add-nodes.md gives, in Debian's HAProxy,
at the moment a node dies: before two failed health checks mark it down, the other nodes are at their
`maxconn` and `leastconn` would pick the dead one (it holds no connection), again on every retry, and answer
503 once the retries are spent. The configuration marks a node down on its first refused connection.

The nodes are small threaded HTTP servers that take a while to answer (the nodes are busy); the active checks
run once a minute here, so only the passive check can mark the dead node down within the test."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import httpx
import pytest

import bench.nodes

ANSWER_S = 0.1  # a busy node: a request holds one of its slots this long
SLOTS = 2  # maxconn per node
REQUESTS = 60  # at once: far more than the live nodes' slots


class SlowNode(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        time.sleep(ANSWER_S)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def _serve() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowNode)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def three_nodes_behind_haproxy(tmp_path, monkeypatch):
    monkeypatch.setattr(bench.nodes, "CHECK_INTERVAL_MS", 60_000)  # one active check at start, the next in 30 s
    servers = [_serve() for _ in range(3)]
    nodes = [SimpleNamespace(name=f"node{i + 1}", host="127.0.0.1", port=s.server_address[1])
             for i, s in enumerate(servers)]
    haproxy = bench.nodes.HAProxy(nodes, tmp_path, node_slots=SLOTS)  # returns once every node is UP
    try:
        yield haproxy, servers
    finally:
        haproxy.stop()
        for server in servers:
            server.shutdown()
            server.server_close()


async def _get_at_once(url: str) -> Counter:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        answers = await asyncio.gather(*(client.get("/studies/") for _ in range(REQUESTS)))
    return Counter(r.status_code for r in answers)


def test_a_node_that_refuses_is_down_at_once_and_no_request_gets_503(three_nodes_behind_haproxy):
    haproxy, servers = three_nodes_behind_haproxy
    dead = servers[1]
    dead.shutdown()
    dead.server_close()  # its port refuses connections from now on, as a SIGKILLed node's does

    answered = asyncio.run(_get_at_once(haproxy.url))

    stats = haproxy.stats()
    assert answered == {200: REQUESTS}, (answered, haproxy.log_tail())
    # down through the passive check, which counts the refused connection, long before the next active check
    assert stats["node2"]["status"] == "DOWN", stats["node2"]
    assert any("Health analyze" in line and "node2 is DOWN" in line for line in haproxy.log_tail()), haproxy.log_tail()
    # the live nodes served every request, never more than their slots at once
    assert int(stats["node1"]["stot"]) + int(stats["node3"]["stot"]) == REQUESTS, stats
    assert max(int(stats["node1"]["smax"]), int(stats["node3"]["smax"])) <= SLOTS, stats
