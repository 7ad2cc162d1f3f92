"""`make run`, `make test` and `make bench`: start what is missing, then run the thing.

    python -m config.launcher run|test|bench [args...]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from config.embedded import services

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONCORD_DATA_DIR") or ROOT / ".data")  # settings.py reads the same place
PY = sys.executable


def main(argv: list[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("run", [])
    handler = {"run": _run, "test": _test, "bench": _bench}.get(command)
    if handler is None:
        print(f"usage: python -m config.launcher run|test|bench [args]; got {command!r}", file=sys.stderr)
        return 2
    with services(DATA) as urls:
        os.environ.update(urls)
        return handler(args)


def _manage(*args: str) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, check=True)


# `make run`: a development server on loopback over plain http (config/settings.py LOCAL_SERVING), showing
# the product's error pages; DEBUG=1 in the environment asks for Django's debug page as well.
LOCAL_ENV = {"CONCORD_LOCAL_SERVING": "1"}
# (name, queues, processes) of `make run`'s Celery workers; tasks not routed by kind go to `default`.
WORKERS = (("judges", "judges", 2), ("builds", "builds", 1), ("housekeeping", "housekeeping,default", 1))


def _run(args: list[str]) -> int:
    for name, value in LOCAL_ENV.items():
        os.environ.setdefault(name, value)
    _manage("migrate", "--noinput", "-v", "0")
    _manage("load_demo")
    port = os.environ.get("PORT", "8000")
    # One worker per kind of background work (config/celery.py KINDS): a stuck build never holds up a judge run
    # or the beat's tasks.
    children = [
        subprocess.Popen([PY, "-m", "celery", "-A", "config", "worker", "-Q", queues, "-c", str(concurrency),
                          "-n", f"{name}@%h", "--loglevel", "INFO"], cwd=ROOT)
        for name, queues, concurrency in WORKERS
    ] + [
        # The scheduler of config.celery's beat_schedule (e.g. the retention purge), beside the worker.
        subprocess.Popen([PY, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                          "--schedule", str(DATA / "celerybeat-schedule")], cwd=ROOT),
        subprocess.Popen([PY, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT),
    ]
    # The demo judges' endpoint (judges/simulation.py demo_judge_endpoint): a loopback fake model server,
    # so a judge run started from the demo's pages has something to talk to. Optional: not watched.
    judge_port = os.environ.get("CONCORD_DEMO_JUDGE_PORT", "8011")
    helpers = [subprocess.Popen([PY, "-m", "judges.fakeserver", "--port", judge_port, "--latency-ms", "20"], cwd=ROOT,
                                stdout=subprocess.DEVNULL)]
    print(f"\nConcord is serving http://127.0.0.1:{port}/  (Ctrl-C stops the web server, worker and databases)\n",
          flush=True)
    stop = {"now": False}

    def _stop(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    while not stop["now"] and all(child.poll() is None for child in children):
        time.sleep(0.5)
    for child in children + helpers:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children + helpers:
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
    print("Concord stopped.")
    return 0


def _bytecode_kept() -> None:
    """The suite and the benches start a few hundred Python processes (servers, workers, commands). Where
    PYTHONDONTWRITEBYTECODE is set, each compiled every module of ours it imported again: 0.7-1.2 s of CPU a
    server or command start on the 2-core machine (2026-11-29). Their bytecode is kept as Python keeps it by
    default, in __pycache__ folders that git ignores; the libraries' own was written when they were installed."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _test(args: list[str]) -> int:
    os.environ["CONCORD_TESTING"] = "1"
    _bytecode_kept()
    return subprocess.run([PY, "-m", "pytest", *args], cwd=ROOT).returncode


def _bench(args: list[str]) -> int:
    _bytecode_kept()
    return subprocess.run([PY, "-m", "bench", *args], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
