"""A launch: how a freshly started gunicorn (4 workers x 4 threads, as the Dockerfile serves it) answers its first
requests. As soon as the server answers one request, 64 raters ask for their next item at once: the moment a study
launched on a panel meets. Then the same 64 ask again, with the server warm. Figures: each burst's p50, p95 and
slowest answer, and the cold burst's slowest over the warm one's.

    python -m bench cold_start
"""

from __future__ import annotations

import asyncio
import secrets
import time

from bench.dbtools import bench_database
from bench.loadclient import free_port, rater_client, setup_study, start_server, stop_server

RATERS = 64
GUNICORN = ["--workers", "4", "--threads", "4", "--worker-class", "gthread", "--log-level", "warning"]


async def _burst(base: str, slug: str, sessions: list[str]) -> list[float]:
    """Every rater's next-item request at once; the milliseconds each took."""

    async def one(session: str) -> float:
        async with rater_client(base, session, timeout=60) as client:
            started = time.perf_counter()
            response = await client.post(f"/api/studies/{slug}/rate/next/")
            response.raise_for_status()
            return (time.perf_counter() - started) * 1000

    return list(await asyncio.gather(*(one(s) for s in sessions)))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def run(full: bool = False) -> dict:
    rows, bursts = [], {}
    with bench_database("coldstart") as db_name:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(400, secret_key, raters=RATERS, raters_per_item=3, name="bench cold start",
                                     user_prefix="bench-cold")
        port = free_port()
        started = time.perf_counter()
        server = start_server(port, secret_key, db_name=db_name, gunicorn_args=GUNICORN)
        first_answer_s = time.perf_counter() - started
        try:
            base = f"http://127.0.0.1:{port}"
            for label in ("cold (the server has answered one request)", "warm (the same raters again)"):
                bursts[label] = asyncio.run(_burst(base, slug, sessions))
        finally:
            stop_server(server)
    rows.append({"metric": "gunicorn started to its first answer", "value": first_answer_s, "unit": "s",
                 "target": None, "ok": None})
    for label, ms in bursts.items():
        for name, value in (("p50", _pct(ms, 50)), ("p95", _pct(ms, 95)), ("slowest", max(ms))):
            rows.append({"metric": f"{RATERS} next-item requests at once, {label}: {name}", "value": value,
                         "unit": "ms", "target": None, "ok": None})
    cold, warm = (max(ms) for ms in bursts.values())
    rows.append({"metric": "slowest answer, cold over warm", "value": cold / warm, "unit": "x", "target": None,
                 "ok": None})
    return {"name": "cold_start", "rows": rows, "samples": bursts,
            "config": {"raters": RATERS, "server": " ".join(GUNICORN), "items": 400}}
