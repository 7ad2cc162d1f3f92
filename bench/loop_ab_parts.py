"""Two of bench/loop_ab.py's candidates measured on their own, where the 1,000-rater A/B's spread (a
millisecond or two of CPU an item on a shared machine) hides them:

- the HTTP server's own CPU per request: gunicorn (gthread, with and without its access log) and granian
  serving bench/tiny_wsgi.py (a fixed answer, no Django), the rating loop's requests (cookies, CSRF header,
  a submit's JSON body) sent by bench/leanhttp.py over kept-alive connections;
- reading the session in the web process: Django's cached_db engine (a Redis read) against signed_cookies
  (an HMAC and a zlib inflate), the same logged-in session.

    python -m bench.loop_ab_parts          -> bench/results/loop_ab_parts.json
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path

from bench.loadclient import answers, free_port, rater_client, stop_server
from bench.loop_variants import granian_command, start_answering, with_granian_path

RESULTS = Path(__file__).resolve().parent / "results"
CONNECTIONS = 100
REQUESTS = 20_000  # per server variant
PROCESSES, THREADS = 2, 16  # as the 1,000-rater phase serves


def _server_variants(port: int, log_dir: Path) -> dict[str, list[str]]:
    gunicorn = [sys.executable, "-m", "gunicorn", "bench.tiny_wsgi:application", "--bind", f"127.0.0.1:{port}",
                "--workers", str(PROCESSES), "--worker-class", "gthread", "--threads", str(THREADS),
                "--worker-connections", "1000", "--log-level", "warning", "--backlog", "2048"]
    return {
        # Dockerfile's access log (gunicorn's default format), to a file instead of stdout
        "gunicorn, access log": [*gunicorn, "--access-logfile", str(log_dir / "access.log")],
        "gunicorn, no access log": gunicorn,
        "granian": granian_command("bench.tiny_wsgi:application", port, workers=PROCESSES, threads=THREADS),
        # granian's access log (its default format) goes to its stderr: the server's log file here
        "granian, access log": granian_command("bench.tiny_wsgi:application", port, workers=PROCESSES,
                                               threads=THREADS, access_log=True),
    }


def _tree_cpu_s(pid: int) -> float:
    import psutil

    total = 0.0
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        times = proc.cpu_times()
        total += times.user + times.system
    return total


async def _send(base: str, n_requests: int) -> None:
    rng = random.Random(1)
    body = {"answers": answers(rng, [{"number": n, "content": "x" * 40} for n in (1, 2, 3)]), "time_on_task_ms": 9000}
    per_connection = n_requests // CONNECTIONS

    async def one(i: int) -> None:
        async with rater_client(base, secrets.token_hex(16), timeout=30, lean=True) as client:
            for _ in range(per_connection):
                resp = await client.post("/api/studies/s/rate/00000000-0000-0000-0000-000000000000/submit/", json=body)
                if resp.status_code != 200:
                    raise RuntimeError(f"HTTP {resp.status_code}")

    await asyncio.gather(*(one(i) for i in range(CONNECTIONS)))


def server_overhead(rounds: int = 2, only: list[str] | None = None) -> dict:
    """Server CPU per request (µs) of each variant, the variants alternating `rounds` times."""
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="concord-parts-") as log_dir:
        for _ in range(rounds):
            for name in only or _server_variants(0, Path(log_dir)):
                port = free_port()
                cmd = _server_variants(port, Path(log_dir))[name]
                server = start_answering(cmd, with_granian_path(dict(os.environ)), f"http://127.0.0.1:{port}/")
                try:
                    asyncio.run(_send(f"http://127.0.0.1:{port}", 1_000))  # every thread warm
                    before, load = _tree_cpu_s(server.pid), os.getloadavg()[0]
                    asyncio.run(_send(f"http://127.0.0.1:{port}", REQUESTS))
                    cpu_us = 1e6 * (_tree_cpu_s(server.pid) - before) / REQUESTS
                finally:
                    stop_server(server)
                out.setdefault(name, []).append(round(cpu_us, 1))
                print(f"{name}: {cpu_us:.0f} µs of server CPU a request (load {load:.1f})", flush=True)
    return out


def session_read(n: int = 3000) -> dict:
    """CPU µs of one session read in this process, per engine: what SessionMiddleware and the user
    lookup ask of it on every request (the user's own statement is the same for both)."""
    import django

    django.setup()
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.cache import SessionStore as CacheStore
    from django.contrib.sessions.backends.signed_cookies import SessionStore as CookieStore

    data = {SESSION_KEY: "123", BACKEND_SESSION_KEY: "annotation.auth_backend.ModelBackend",
            HASH_SESSION_KEY: secrets.token_hex(32)}
    out = {}
    # cached_db reads the cache first and the database only on a miss: a warm session is cache's read.
    for name, store_class in (("cached_db (Redis read)", CacheStore), ("signed_cookies", CookieStore)):
        store = store_class()
        store.update(data)
        store.save()  # cache: a new key and the data in Redis; signed_cookies: the data as the key
        key = store.session_key
        if store_class(session_key=key).load() != data:
            raise RuntimeError(f"{name}: the session did not read back")
        started = time.process_time()
        for _ in range(n):
            store_class(session_key=key).load()
        out[name] = round(1e6 * (time.process_time() - started) / n, 1)
    return out


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    result = {"name": "loop_ab_parts", "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpus": os.cpu_count(), "load_before": os.getloadavg(),
              "server_cpu_us_per_request": server_overhead(), "session_read_cpu_us": session_read(),
              "load_after": os.getloadavg(), "connections": CONNECTIONS, "requests_per_variant": REQUESTS,
              "server": f"{PROCESSES} processes x {THREADS} threads, bench/tiny_wsgi.py"}
    (RESULTS / "loop_ab_parts.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
