"""Judging throughput: Concord's backend + method layer vs a plain async httpx loop.

Both drive the same OpenAI-compatible fake server (judges.fakeserver, in its own process)
with a fixed per-request latency, so the server is the bottleneck as a model server would
be, at the same concurrency, in one run. DESIGN.md target: Concord >= 95% of the plain
loop's throughput. Default: 400 judgements per side; full: 2,000.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from judges.backends.openai_compat import OpenAICompatBackend
from judges.methods import MethodSettings, per_criterion, targets_for
from judges.prompts import build_criterion

REPO = Path(__file__).resolve().parent.parent
LATENCY_MS = 20
CONCURRENCY = 8
ROUNDS = 5
RUBRIC = {
    "slug": "bench", "name": "Bench rubric", "description": "Throughput benchmark.",
    "instructions": "Judge the response for helpfulness. " * 40,  # a realistic shared prefix (~300 words)
    "criteria": [{"key": "helpful", "name": "Helpfulness", "kind": "likert", "min": 1, "max": 5,
                  "levels": [{"value": v, "label": str(v), "description": f"level {v} description"} for v in range(1, 6)]}],
}


def make_items(n: int) -> list[dict[str, Any]]:
    return [{"id": f"b{i}", "context": f"Question number {i}: explain the result.",
             "outputs": [{"system": "m", "content": f"Answer {i}. " + "The result follows from the data. " * 8}]}
            for i in range(n)]


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "judges.fakeserver", "--port", "0", "--latency-ms", str(LATENCY_MS)],
                            cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError("fake server did not start")
    return proc, url


async def plain_loop(url: str, bodies: list[dict], concurrency: int = CONCURRENCY) -> int:
    """The reference: a bare semaphore + httpx + json, nothing else."""
    sem = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        async def one(body: dict) -> str:
            async with sem:
                r = await client.post(url + "/chat/completions", json=body)
            return r.json()["choices"][0]["message"]["content"]
        out = await asyncio.gather(*(one(b) for b in bodies))
    return sum(1 for x in out if x)


async def concord(url: str, items: list[dict], model: str = "fake", concurrency: int = CONCURRENCY,
                  max_tokens: int = 64) -> int:
    """Judgements Concord's backend + method layer got back (parsed or not: the server answered)."""
    backend = OpenAICompatBackend({"base_url": url, "model": model, "max_concurrency": concurrency,
                                   "timeout_s": 300})
    results = await per_criterion(backend, RUBRIC, targets_for(items), MethodSettings(max_tokens=max_tokens))
    return sum(1 for r in results if r.status != "error")


def timed(fn) -> tuple[float, int]:
    t0 = time.perf_counter()
    n = fn()
    return time.perf_counter() - t0, n


def run(full: bool = False) -> dict:
    n = 2000 if full else 400
    items = make_items(n)
    # the plain loop sends the very same prompts Concord builds
    bodies = [{"model": "fake", "messages": list(build_criterion(RUBRIC, "helpful", it, 0).messages),
               "temperature": 0.0, "max_tokens": 64} for it in items]
    proc, url = start_server()
    try:
        asyncio.run(plain_loop(url, bodies[:20]))  # warm up connections and the server's threads
        plain_t, conc_t = [], []
        for _ in range(ROUNDS):  # interleaved rounds, best of each, so drift hits both sides alike
            t, ok_plain = timed(lambda: asyncio.run(plain_loop(url, bodies)))
            plain_t.append(t)
            t, ok_conc = timed(lambda: asyncio.run(concord(url, items)))
            conc_t.append(t)
        stats = httpx.get(url + "/_stats").json()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    plain_rate, conc_rate = n / min(plain_t), n / min(conc_t)
    ideal = CONCURRENCY * 1000 / LATENCY_MS
    ratio = conc_rate / plain_rate
    return {
        "name": "judges",
        "rows": [
            {"metric": "plain httpx loop throughput", "value": plain_rate, "unit": "judgements/s",
             "target": f"server bound ~{ideal:.0f}/s", "ok": None},
            {"metric": "Concord backend+method throughput", "value": conc_rate, "unit": "judgements/s",
             "target": None, "ok": None},
            {"metric": "Concord / plain loop", "value": ratio, "unit": "ratio", "target": ">= 0.95",
             "ok": ratio >= 0.95},
            {"metric": "judgements answered (Concord)", "value": float(ok_conc), "unit": "count",
             "target": f"= {n}", "ok": ok_conc == n and ok_plain == n},
            {"metric": "server max in-flight", "value": float(stats["max_in_flight"]), "unit": "requests",
             "target": f"<= {CONCURRENCY}", "ok": stats["max_in_flight"] <= CONCURRENCY},
        ],
        "config": {"n": n, "latency_ms": LATENCY_MS, "concurrency": CONCURRENCY},
    }


if __name__ == "__main__":
    print(json.dumps(run(full="--full" in sys.argv), indent=2))
