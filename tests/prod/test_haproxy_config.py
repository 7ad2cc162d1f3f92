"""The HAProxy configuration that bench/nodes.py runs and docs/how-to/add-nodes.md gives, in Debian's HAProxy,
at the moment a node dies: before two failed health checks mark it down, the other nodes are at their
`maxconn` and `leastconn` would pick the dead one (it holds no connection), again on every retry, and answer
503 once the retries are spent. The configuration marks a node down on its first refused connection.

The nodes are small threaded HTTP servers that take a while to answer (the nodes are busy). The dead node's
active checks go to a live server's port and keep passing: the moment between a node's death and the checks that
notice it, held open for the whole test, so that only the passive check can mark it down.

And a node that dies holding a GET: HAProxy repeats it elsewhere if the node had not begun its answer, and
cannot once the node's headers went out."""

from __future__ import annotations

import asyncio
import socket
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
def three_nodes_behind_haproxy(tmp_path):
    """node1 and node3 live; node2's port refuses (nothing listens there) while its checks reach node1."""
    live = [_serve(), _serve()]
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there now
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    ports = [live[0].server_address[1], dead_port, live[1].server_address[1]]
    nodes = [SimpleNamespace(name=f"node{i + 1}", host="127.0.0.1", port=port) for i, port in enumerate(ports)]
    nodes[1].check_port = ports[0]
    haproxy = bench.nodes.HAProxy(nodes, tmp_path, node_slots=SLOTS)  # returns once every node is UP
    try:
        yield haproxy
    finally:
        haproxy.stop()
        for server in live:
            server.shutdown()
            server.server_close()


async def _get_at_once(url: str) -> Counter:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        answers = await asyncio.gather(*(client.get("/studies/") for _ in range(REQUESTS)))
    return Counter(r.status_code for r in answers)


def test_a_node_that_refuses_is_down_at_once_and_no_request_gets_503(three_nodes_behind_haproxy):
    haproxy = three_nodes_behind_haproxy

    answered = asyncio.run(_get_at_once(haproxy.url))

    stats, log = haproxy.stats(), haproxy.log_tail()
    assert answered == {200: REQUESTS}, (answered, log)
    # down through the passive check, which counts the refused connection (its active checks pass)
    assert any("node2 is DOWN" in line and "Health analyze" in line for line in log), log
    # the live nodes served every request, never more than their slots at once
    assert int(stats["node1"]["stot"]) + int(stats["node3"]["stot"]) == REQUESTS, stats
    assert max(int(stats["node1"]["smax"]), int(stats["node3"]["smax"])) <= SLOTS, stats


class DyingNode(SlowNode):
    """A node killed while it holds a GET: on /cut-before/ before its answer began, on /cut-mid/ after its
    headers went out (gunicorn writes the headers and the body in two calls; a SIGKILL can fall between)."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        if not self.path.startswith(("/cut-mid/", "/cut-before/")):
            return super().do_GET()  # the health checks
        if self.path.startswith("/cut-mid/"):
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)  # what the kernel does with a killed process's socket
        self.close_connection = True


@pytest.fixture
def a_dying_node_and_a_live_one(tmp_path):
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), DyingNode), _serve()]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    nodes = [SimpleNamespace(name=f"node{i + 1}", host="127.0.0.1", port=s.server_address[1])
             for i, s in enumerate(servers)]
    haproxy = bench.nodes.HAProxy(nodes, tmp_path, node_slots=SLOTS)
    try:
        yield haproxy
    finally:
        haproxy.stop()
        for server in servers:
            server.shutdown()
            server.server_close()


def _reads(url: str, path: str, n: int) -> list[str]:
    """n GETs one after another, each on its own connection: "200" or the client's error."""
    out = []
    for _ in range(n):
        try:
            out.append(str(httpx.get(url + path, timeout=10).status_code))
        except httpx.TransportError as exc:
            out.append(f"{type(exc).__name__}: {exc}")
    return out


def test_haproxy_retries_a_get_cut_before_its_answer_not_one_cut_mid_answer(a_dying_node_and_a_live_one):
    """The premise of tests/prod/test_three_nodes.py's one allowed read failure (bench_three_nodes.cut_by_the_kill)."""
    from bench.bench_three_nodes import FailoverRun, cut_by_the_kill

    haproxy = a_dying_node_and_a_live_one
    before = _reads(haproxy.url, "/cut-before/", 6)
    stats = haproxy.stats()
    # the dying node took some and gave nothing; HAProxy sent each again to the live node
    assert before == ["200"] * 6, (before, haproxy.log_tail())
    assert int(stats["node1"]["stot"]) > 0 and int(stats["node1"]["wredis"]) > 0, stats

    mid = _reads(haproxy.url, "/cut-mid/", 6)
    failed = [m for m in mid if m != "200"]
    assert failed, (mid, haproxy.stats())  # leastconn gave the dying node some of them
    run = FailoverRun(killed_at=0.0, reads_failed=[f"before->during: {m}" for m in failed])
    assert cut_by_the_kill(run) == run.reads_failed, failed  # the signature the three-node test allows
