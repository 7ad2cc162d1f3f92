"""Concord as a deployment of several nodes on one machine: N web nodes behind HAProxy, one PgBouncer between
them and PostgreSQL, Redis, and a Celery worker as a node of its own, connected to PostgreSQL directly
(scripts/ensure-haproxy.sh installs Debian's HAProxy; bench/pgbouncer.py starts PgBouncer).

Each web node is gunicorn in its own process group with its own temp dir and access log, bound on its own
loopback address (127.0.0.2, .3, .4, ...: Linux answers all of 127/8 on lo). Every node and the worker
get the same MEDIA_ROOT, as a shared network file system gives them. HAProxy listens on 127.0.0.1 and
checks each node's /login/ (Concord has no health route of its own; the sign-in page needs no session
and no database, so it answers while the process can serve).

    with running_cluster(database_url, secret_key, media_root=tmp, nodes=3) as cluster:
        cluster.url                       # http://127.0.0.1:<port>, HAProxy
        cluster.nodes[1].kill()           # SIGKILL its process group
        cluster.haproxy.wait_for(cluster.nodes[1].name, "DOWN")
        cluster.nodes[1].start()
        cluster.haproxy.stats()           # per node: status, requests, retries, redispatches

docs/how-to/add-nodes.md shows HAPROXY_CONFIG as a load balancer example.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench.loadclient import free_port, start_server, stop_server
from bench.pgbouncer import pooled_env, running_pgbouncer

ROOT = Path(__file__).resolve().parent.parent
HAPROXY = os.environ.get("CONCORD_HAPROXY", "/usr/sbin/haproxy")
HEALTH_PATH = "/login/"
CHECK_INTERVAL_MS = 500  # a node that stops answering is marked down after FALL checks (about a second)
FALL, RISE = 2, 2
# Three nodes importing Django at once on a busy 2-core machine took over a minute (2026-11-28, load 13)
START_WITHIN_S = 240
CHECK_TIMEOUT_S = 5  # a dead node refuses at once; a busy one may take a while and is still alive
# gunicorn's access log: method, path, status (a node's share of the traffic is counted from it)
ACCESS_FORMAT = "%(m)s %(U)s %(s)s"

# Retries: HAProxy repeats a request cut off by a dying node (`retry-on`) only for GET and HEAD, which are
# idempotent; a POST cut off comes back as 502 (or its connection closed) and the client sends it again (the
# workspace keeps the answers and the rater submits again; a submit is idempotent per assignment). A
# connection that was refused never reached a node, so it goes to another one whatever the method.
HAPROXY_CONFIG = """\
global
    maxconn 4096               # 1,000 raters' connections and the nodes', with room
    stats socket {admin_socket} mode 600 level admin
    log stdout format raw local0 # into haproxy.log: each 5xx answer, with its termination state

defaults
    mode http
    log global
    option httplog             # a line has the termination state: SC-- the node refused, sQ-- the queue timed out
    option forwardfor          # the client's address for django-axes (TRUSTED_PROXY_COUNT=1)
    timeout connect 2s
    timeout client 60s
    timeout server 30s
    timeout queue 30s
    timeout http-keep-alive 75s
    timeout check {check_timeout}s
    retries 3
    option redispatch 1        # every retry goes to another node
    retry-on conn-failure empty-response response-timeout

frontend concord
    bind 127.0.0.1:{port}
    http-request disable-l7-retry unless METH_GET   # METH_GET is GET and HEAD
    # the log keeps a node's 5xx answers; HAProxy's own errors (503 with no node, 502) it always keeps
    http-response set-log-level silent if {{ status lt 500 }}
    default_backend web

backend web
    balance leastconn
    option httpchk
    http-check send meth GET uri {health_path} ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
    # maxconn: a node's worker threads. More requests wait in HAProxy's queue (timeout queue), not in the
    # node's accept queue, where the health check would wait behind them and time out when the node is busy
    default-server check inter {inter}ms fastinter {fastinter}ms downinter {inter}ms fall {fall} rise {rise} maxconn {maxconn}
    # A node whose connection is refused is down at once, not at the next two checks: meanwhile `leastconn`
    # would pick it (it holds no connection) whenever the others are at maxconn, retries included, and a
    # request refused four times gets 503 (CI, 2026-11-29: two GETs in the half second after the kill).
    default-server observe layer4 error-limit 1 on-error mark-down
{servers}
"""


def _free_port_on(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class WebNode:
    """One web node: gunicorn bound on its own loopback address, with its own temp dir."""

    name: str
    host: str
    home: Path
    secret_key: str
    database_url: str
    env: dict[str, str]
    gunicorn_args: list[str]
    port: int = 0
    proc: subprocess.Popen | None = None
    starts: int = 0

    @property
    def access_log(self) -> Path:
        return self.home / "access.log"

    def start(self) -> None:
        """Start gunicorn (again, after a kill: the same address and port); returns once it answers."""
        self.port = self.port or _free_port_on(self.host)
        args = [*self.gunicorn_args, "--access-logfile", str(self.access_log), "--access-logformat", ACCESS_FORMAT,
                "--worker-tmp-dir", str(self.home)]
        self.proc = start_server(self.port, self.secret_key, database_url=self.database_url, host=self.host,
                                 gunicorn_args=args, extra_env={**self.env, "TMPDIR": str(self.home)},
                                 ready_within_s=START_WITHIN_S)
        self.starts += 1

    def kill(self) -> None:
        """SIGKILL the node's whole process group (master and workers), as a machine that dies."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        if self.proc is not None:
            stop_server(self.proc)  # removes its log file

    def served(self, prefix: str = "/api/") -> int:
        """Requests under `prefix` this node has answered (its access log; health checks are not under /api/)."""
        if not self.access_log.exists():
            return 0
        paths = (line.split(" ", 2)[1] for line in self.access_log.read_text().splitlines() if line.count(" ") >= 2)
        return sum(1 for path in paths if path.startswith(prefix))


class HAProxy:
    """HAProxy in front of the web nodes, with its admin socket for the nodes' state and counters."""

    def __init__(self, nodes: list[WebNode], work: Path, node_slots: int):
        self.port = free_port()
        self.admin_socket = work / "admin.sock"
        self.config_path = work / "haproxy.cfg"
        # a node may be checked on another port (`check_port`): tests/prod/test_haproxy_config.py's node whose
        # checks pass while its service refuses, the moment between a death and the checks that notice it
        servers = "\n".join(f"    server {n.name} {n.host}:{n.port}"
                             + (f" port {n.check_port}" if getattr(n, "check_port", None) else "") for n in nodes)
        self.config_path.write_text(HAPROXY_CONFIG.format(
            admin_socket=self.admin_socket, port=self.port, health_path=HEALTH_PATH, inter=CHECK_INTERVAL_MS,
            fastinter=CHECK_INTERVAL_MS // 2, fall=FALL, rise=RISE, check_timeout=CHECK_TIMEOUT_S, maxconn=node_slots,
            servers=servers))
        self.log = work / "haproxy.log"
        if not Path(HAPROXY).exists():
            raise RuntimeError(f"HAProxy not found at {HAPROXY}: run scripts/ensure-haproxy.sh")
        check = subprocess.run([HAPROXY, "-c", "-q", "-f", str(self.config_path)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError("HAProxy refused its configuration: " + check.stderr[-2000:])
        with self.log.open("ab") as out:  # -db: in the foreground, no daemon; its own process group
            self.proc = subprocess.Popen([HAPROXY, "-db", "-f", str(self.config_path)], stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        names = [n.name for n in nodes]
        try:
            self.wait_for(names, "UP", timeout_s=30)
        except Exception:
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _command(self, command: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(self.admin_socket))
            s.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stats(self) -> dict[str, dict[str, str]]:
        """`show stat` of the web backend, by node name: status (UP, DOWN, "DOWN 1/2", ...), stot (requests
        sent to it), wretr (retries), wredis (redispatches), hrsp_5xx, eresp, econ, chkfail, ..."""
        try:
            text = self._command("show stat")
        except OSError:
            if self.proc.poll() is not None:
                raise RuntimeError("HAProxy exited: " + self.log.read_text(errors="replace")[-2000:]) from None
            raise
        rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
        return {row["svname"]: row for row in rows if row["pxname"] == "web"}

    def wait_for(self, names: str | list[str], status: str, timeout_s: float = 60.0) -> float:
        """Poll until every named node has exactly this status (UP or DOWN); returns when (monotonic)."""
        names = [names] if isinstance(names, str) else names
        deadline = time.monotonic() + timeout_s
        while True:
            with contextlib.suppress(FileNotFoundError, ConnectionRefusedError):
                found = self.stats()
                if all(found[n]["status"] == status for n in names):
                    return time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(f"HAProxy: {names} not {status} within {timeout_s} s")
            time.sleep(0.05)

    def log_tail(self, lines: int = 30) -> list[str]:
        """HAProxy's last log lines: its warnings (a node going down or up) and each failed or retried
        request with its termination state (e.g. `SC--`: the server refused; `sQ--`: the queue timed out)."""
        return self.log.read_text(errors="replace").splitlines()[-lines:] if self.log.exists() else []

    def stop(self) -> None:
        stop_server(self.proc)  # its process group: SIGTERM, then SIGKILL if it lingers


def start_worker_node(home: Path, env: dict[str, str]) -> subprocess.Popen:
    """A Celery worker (every queue, one process) as a node of its own: its own temp dir, the shared MEDIA_ROOT."""
    cmd = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default,judges,builds,housekeeping",
           "-c", "1",
           "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning",
           "-n", f"worker-node-{time.monotonic_ns()}@%h"]
    with (home / "worker.log").open("ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env={**env, "TMPDIR": str(home)}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


@dataclass
class Cluster:
    nodes: list[WebNode]
    haproxy: HAProxy
    worker: subprocess.Popen
    pgbouncer: subprocess.Popen
    db_name: str
    media_root: Path
    work: Path

    @property
    def url(self) -> str:
        return self.haproxy.url

    def worker_log_tail(self, chars: int = 3000) -> str:
        path = self.work / "worker" / "worker.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _threads(gunicorn_args: list[str]) -> int:
    """Requests a gunicorn node serves at once: workers x threads (gunicorn's defaults: 1 and 1)."""
    def value(flag: str) -> int:
        return int(gunicorn_args[gunicorn_args.index(flag) + 1]) if flag in gunicorn_args else 1
    return value("--workers") * value("--threads")


def node_env(database_url: str, secret_key: str, media_root: Path, redis_url: str) -> dict[str, str]:
    """What every node of one deployment shares: the same database, Redis, SECRET_KEY and
    MEDIA_ROOT; one proxy in front (TRUSTED_PROXY_COUNT: django-axes reads the client from X-Forwarded-For)."""
    return {"DATABASE_URL": database_url, "REDIS_URL": redis_url, "SECRET_KEY": secret_key,
            "MEDIA_ROOT": str(media_root), "TRUSTED_PROXY_COUNT": "1"}


@contextlib.contextmanager
def running_cluster(database_url: str, secret_key: str, *, media_root: Path, redis_url: str, nodes: int = 3,
                    gunicorn_args: list[str] | None = None, pool_size: int = 10,
                    max_clients: int = 1000) -> Iterator[Cluster]:
    """PgBouncer, `nodes` web nodes on 127.0.0.2.., HAProxy on 127.0.0.1 and a Celery worker node; all
    stopped afterwards. `database_url` is the database itself (PgBouncer pools it)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    work = Path(tempfile.mkdtemp(prefix="concord-nodes-"))
    args = gunicorn_args or ["--workers", "2", "--worker-class", "gthread", "--threads", "8", "--log-level", "warning",
                             "--backlog", "2048", "--worker-connections", "1000"]
    web: list[WebNode] = []
    haproxy = worker = None
    try:
        with running_pgbouncer(database_url, pool_size=pool_size, max_clients=max_clients,
                               unix_socket=True) as (pooled, bouncer):
            try:
                env = {**node_env(pooled, secret_key, media_root, redis_url), **pooled_env()}
                for i in range(nodes):
                    home = work / f"node{i + 1}"
                    home.mkdir()
                    web.append(WebNode(f"node{i + 1}", f"127.0.0.{i + 2}", home, secret_key, pooled, env, args))
                with ThreadPoolExecutor(len(web)) as pool:  # gunicorn's start is mostly imports: all at once
                    list(pool.map(WebNode.start, web))
                (work / "worker").mkdir()
                # The worker takes session-level advisory locks (release builds, the lost-work sweep), which a
                # transaction-mode pool cannot hold for it: it reaches PostgreSQL directly (docs/scaling.md).
                direct = {**node_env(database_url, secret_key, media_root, redis_url), "CONCORD_TESTING": "0",
                          "DEBUG": "0"}
                worker = start_worker_node(work / "worker", {**os.environ, **direct})
                haproxy = HAProxy(web, work, node_slots=_threads(args))
                yield Cluster(web, haproxy, worker, bouncer, urlsplit(database_url).path.lstrip("/"), media_root,
                              work)
            finally:  # before PgBouncer goes: the proxy, then the nodes and the worker together
                if haproxy is not None:
                    haproxy.stop()
                with ThreadPoolExecutor(len(web) + 1) as pool:  # each waits for its requests to finish
                    list(pool.map(stop_server, [n.proc for n in web if n.proc] + ([worker] if worker else [])))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def signed_in_session(user, secret_key: str) -> str:
    """A session key for `user`, signed with the servers' secret key, as the login form leaves it."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    own_key, settings.SECRET_KEY = settings.SECRET_KEY, secret_key
    try:
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "annotation.auth_backend.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        return store.session_key
    finally:
        settings.SECRET_KEY = own_key
