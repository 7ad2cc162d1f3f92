"""Judging throughput through llama.cpp's own server: Concord's backend + method layer against a bare
httpx loop sending the same requests (the server's own throughput), in one run, interleaved.

The server (llama-cpp-python's `llama_cpp.server`, one model, requests served one at a time) on the
tiny random Llama of judges/llamacpp.py is the bottleneck, as a model server should be. DESIGN.md
target: Concord >= 95% of the server's own throughput. Default 120 judgements per side; full 400.
"""
from __future__ import annotations

import asyncio
import json
import sys

from bench.bench_judges import RUBRIC, concord, make_items, plain_loop, timed
from judges.llamacpp import MODEL_NAME, running_llamacpp_server, server_version
from judges.prompts import build_criterion

CONCURRENCY = 4
MAX_TOKENS = 16
ROUNDS = 3


def run(full: bool = False) -> dict:
    n = 400 if full else 120
    items = make_items(n)
    bodies = [{"model": MODEL_NAME, "messages": list(build_criterion(RUBRIC, "helpful", it, 0).messages),
               "temperature": 0.0, "max_tokens": MAX_TOKENS} for it in items]
    with running_llamacpp_server() as server:
        url = server.base_url
        asyncio.run(plain_loop(url, bodies[:8], CONCURRENCY))  # warm up
        plain_t, conc_t = [], []
        for _ in range(ROUNDS):
            t, ok_plain = timed(lambda: asyncio.run(plain_loop(url, bodies, CONCURRENCY)))
            plain_t.append(t)
            t, ok_conc = timed(lambda: asyncio.run(concord(url, items, MODEL_NAME, CONCURRENCY, MAX_TOKENS)))
            conc_t.append(t)
    plain_rate, conc_rate = n / min(plain_t), n / min(conc_t)
    ratio = conc_rate / plain_rate
    return {
        "name": "llamacpp_throughput",
        "rows": [
            {"metric": "llama.cpp server's own throughput (bare httpx loop)", "value": plain_rate,
             "unit": "judgements/s", "target": None, "ok": None},
            {"metric": "Concord backend+method through llama.cpp", "value": conc_rate, "unit": "judgements/s",
             "target": None, "ok": None},
            {"metric": "Concord / server's own (llama.cpp)", "value": ratio, "unit": "ratio", "target": ">= 0.95",
             "ok": ratio >= 0.95},
            {"metric": "judgements answered (Concord, llama.cpp)", "value": float(ok_conc), "unit": "count",
             "target": f"= {n}", "ok": ok_conc == n},
        ],
        "server": f"llama-cpp-python {server_version()} (llama_cpp.server)",
        "config": {"n": n, "concurrency": CONCURRENCY, "max_tokens": MAX_TOKENS, "rounds": ROUNDS,
                   "model": MODEL_NAME},
        "times_s": {"plain": plain_t, "concord": conc_t},
    }


if __name__ == "__main__":
    print(json.dumps(run(full="--full" in sys.argv), indent=2))
