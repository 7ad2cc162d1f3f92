"""The first minute of a new user, measured as they live it: `make run` on fresh clones of this checkout's HEAD.

1. a fresh clone with an empty package cache (uv's and pip's caches point at an empty folder): seconds from
   `make run` to the first page answered (the home page, or its redirect to sign-in);
2. a second fresh clone with the cache the first one filled (a warm cache): the same;
3. that clone stopped with Ctrl-C and started again (the second start): the same;
and what the terminal printed, so the calm terminal can be read off the JSON. Each start's demo is followed until
it says it is ready (up to DEMO_WAIT_S), for the record, not the figure.

    python -m bench first_minute
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.loadclient import free_port

ROOT = Path(__file__).resolve().parent.parent
TARGETS_S = {"cold cache": 45.0, "warm cache": 20.0, "second start": 5.0}  # issue "The first minute"
FIRST_PAGE_LIMIT_S = 600.0
DEMO_WAIT_S = 240.0


def _env(cache: Path) -> dict[str, str]:
    """A new user's environment: no database or broker named (make run starts its own), the package caches where
    the measurement puts them, free ports so that a running Concord on this machine does not answer instead."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CONCORD_TESTING", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV")
           and not k.startswith("CONCORD_")}
    env.update(UV_CACHE_DIR=str(cache / "uv"), PIP_CACHE_DIR=str(cache / "pip"), PORT=str(free_port()),
               CONCORD_DEMO_JUDGE_PORT=str(free_port()))
    return env


def _answers(url: str) -> bool:
    """Whether the server answered with a page (a redirect to sign-in counts: that is the first page)."""
    request = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:  # noqa: S310 - loopback
            return reply.status < 500
    except urllib.error.HTTPError as error:
        return error.code < 500
    except (urllib.error.URLError, OSError):
        return False


class _Start:
    """One `make run` in `clone`, its terminal kept line by line."""

    def __init__(self, clone: Path, env: dict[str, str]):
        self.began = time.perf_counter()
        self.lines: list[tuple[float, str]] = []
        self.process = subprocess.Popen(["make", "run"], cwd=clone, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append((round(time.perf_counter() - self.began, 1), line.rstrip("\n")))

    def first_page_s(self, url: str) -> float | None:
        """When the page at the address make run printed first answered: the address is what a user waits for
        (the web server may bind while the schema step still runs, and would answer a redirect to sign-in)."""
        while time.perf_counter() - self.began < FIRST_PAGE_LIMIT_S and self.process.poll() is None:
            if any(line.startswith("Concord is serving") for _, line in self.lines) and _answers(url):
                return round(time.perf_counter() - self.began, 1)
            time.sleep(0.2)
        return None

    def demo_ready_s(self) -> float | None:
        while time.perf_counter() - self.began < DEMO_WAIT_S and self.process.poll() is None:
            if any("Demo studies ready" in line or "did not load" in line for _, line in self.lines):
                return round(time.perf_counter() - self.began, 1)
            time.sleep(0.5)
        return None

    def stop(self) -> None:
        """Ctrl-C, as a user stops it."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.reader.join(timeout=5)


def _clone(into: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(into)], check=True)
    return into


def _measure(clone: Path, env: dict[str, str], label: str, wait_demo: bool) -> dict:
    start = _Start(clone, env)
    try:
        first = start.first_page_s(f"http://127.0.0.1:{env['PORT']}/")
        demo = start.demo_ready_s() if wait_demo and first is not None else None
    finally:
        start.stop()
    return {"label": label, "first_page_s": first, "demo_ready_s": demo, "exit_code": start.process.returncode,
            "terminal": [f"[{t:6.1f} s] {line}" for t, line in start.lines]}


def run(full: bool = False) -> dict:
    starts = []
    with tempfile.TemporaryDirectory(prefix="concord-first-minute-") as tmp:
        tmp_path = Path(tmp)
        env = _env(tmp_path / "cache")  # empty: the first clone fills it
        starts.append(_measure(_clone(tmp_path / "cold"), env, "cold cache", wait_demo=False))
        warm = _clone(tmp_path / "warm")
        starts.append(_measure(warm, env, "warm cache", wait_demo=True))
        starts.append(_measure(warm, env, "second start", wait_demo=False))
    rows = [{"metric": f"make run on a fresh clone to the first page, {s['label']}" if s["label"] != "second start"
             else "make run started again to the first page (second start)",
             "value": s["first_page_s"], "unit": "s", "target": f"< {TARGETS_S[s['label']]:g} s",
             "ok": None if s["first_page_s"] is None else s["first_page_s"] < TARGETS_S[s["label"]]}
            for s in starts]
    if starts[1]["demo_ready_s"] is not None:
        rows.append({"metric": "warm-cache clone: the demo studies ready", "value": starts[1]["demo_ready_s"],
                     "unit": "s", "target": None, "ok": None})
    return {"name": "first_minute", "rows": rows, "starts": starts}
