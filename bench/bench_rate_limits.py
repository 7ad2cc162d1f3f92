"""Shared rate limits: several worker processes against one provider quota, with and without the
per-judge limiter in Redis (judges/ratelimit.py).

A loopback server enforces a quota of QUOTA requests per WINDOW_S seconds (a moving window, as
providers do) and answers 429 with Retry-After past it. WORKERS processes, each its own
OpenAICompatBackend at CONCURRENCY, send REQUESTS requests in all: first with no limiter (every 429 is
retried with backoff), then each with a SharedRateLimiter of the same judge name at the same quota.
Prints the 429s the server gave and the requests it answered per window. Run:
    env REDIS_URL=redis://127.0.0.1:6379/N .venv/bin/python -m bench.bench_rate_limits
"""
from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUOTA, WINDOW_S = 20, 2
WORKERS, CONCURRENCY, REQUESTS = 4, 8, 160


class QuotaServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        from limits import RateLimitItemPerSecond
        from limits.storage import MemoryStorage
        from limits.strategies import MovingWindowRateLimiter

        super().__init__(("127.0.0.1", 0), Handler)
        self.item = RateLimitItemPerSecond(QUOTA, WINDOW_S)
        self.window = MovingWindowRateLimiter(MemoryStorage())
        self.lock = threading.Lock()
        self.answered = self.refused = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: QuotaServer

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            ok = self.server.window.hit(self.server.item, "quota")
            if ok:
                self.server.answered += 1
            else:
                self.server.refused += 1
        if ok:
            body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "3"},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()
            status, headers = 200, {}
        else:
            body, status, headers = b'{"error": {"message": "rate limited"}}', 429, {"Retry-After": "1"}
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


def worker(url: str, n: int, name: str | None, redis_url: str) -> None:
    from judges.backends.base import JudgeRequest
    from judges.backends.openai_compat import OpenAICompatBackend
    from judges.ratelimit import SharedRateLimiter

    backend = OpenAICompatBackend({"base_url": url, "model": "m", "max_concurrency": CONCURRENCY,
                                   "max_retries": 20, "backoff_base_s": 0.2, "backoff_max_s": 2.0})
    if name:
        backend.limiter = SharedRateLimiter(name, redis_url=redis_url, rpm=QUOTA, window_s=WINDOW_S)
    requests = [JudgeRequest(messages=({"role": "user", "content": f"rate {i}"},), max_tokens=4) for i in range(n)]
    asyncio.run(backend.score_many(requests))


def run(shared: bool, redis_url: str) -> dict:
    server = QuotaServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    name = f"bench-{uuid.uuid4().hex[:8]}" if shared else None
    start = time.perf_counter()
    procs = [mp.Process(target=worker, args=(url, REQUESTS // WORKERS, name, redis_url)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - start
    server.shutdown()
    return {"shared_limiter": shared, "answered": server.answered, "429s": server.refused,
            "seconds": round(elapsed, 2), "answered_per_window": round(server.answered / elapsed * WINDOW_S, 1)}


def main() -> None:
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    print(f"quota {QUOTA} requests / {WINDOW_S} s; {WORKERS} worker processes x concurrency {CONCURRENCY}; "
          f"{REQUESTS} requests")
    for shared in (False, True):
        print(json.dumps(run(shared, redis_url)))


if __name__ == "__main__":
    main()
