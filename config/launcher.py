"""`make run`, `make test` and `make bench`: start what is missing, then run the thing.

    python -m config.launcher run|test|bench [args...]
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from config.embedded import services

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CONCORD_DATA_DIR") or ROOT / ".data")  # settings.py reads the same place
PY = sys.executable


def main(argv: list[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("run", [])
    if command == "run":
        return _serve(args)
    handler = {"test": _test, "bench": _bench}.get(command)
    if handler is None:
        print(f"usage: python -m config.launcher run|test|bench [args]; got {command!r}", file=sys.stderr)
        return 2
    with services(DATA) as urls:
        os.environ.update(urls)
        return handler(args)


def _serve(args: list[str]) -> int:
    from config.run_console import Console

    _bytecode_kept()  # a second start then imports compiled modules: the web server bound in 5.7 s, not 1.8
    console = Console(DATA / "logs" / "run.log")
    print("Starting Concord (the servers' logs: .data/logs/run.log)", flush=True)
    with contextlib.ExitStack() as stack:
        with console.step("PostgreSQL and Redis"):
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")  # pgserver's platformdirs, harmless
            os.environ.update(stack.enter_context(services(DATA)))
        return _run(args, console)


# `make run`: a development server on loopback over plain http (config/settings.py LOCAL_SERVING), showing
# the product's error pages; DEBUG=1 in the environment asks for Django's debug page as well.
LOCAL_ENV = {"CONCORD_LOCAL_SERVING": "1"}
# (name, queues, processes) of `make run`'s Celery workers; tasks not routed by kind go to `default`.
WORKERS = (("judges", "judges", 2), ("builds", "builds", 1), ("housekeeping", "housekeeping,default", 1))


def _run(args: list[str], console) -> int:
    """Serve as soon as the schema is in place; the demo fills in the background (the home page shows how
    far), the docs site builds in the background when its sources changed. The terminal gets one line a
    step and the URL with the accounts last; the servers' and tasks' logs go to .data/logs/run.log."""
    from config.run_console import docs_build_command, migrations_pending, note_migrated

    for name, value in LOCAL_ENV.items():
        os.environ.setdefault(name, value)
    port = os.environ.get("PORT", "8000")
    judge_port = os.environ.get("CONCORD_DEMO_JUDGE_PORT", "8011")
    # --skip-checks as the web server: the system checks import every view (and the statistics behind
    # them), about a second of the schema step on a fresh clone.
    migrate = (console.start("schema", [PY, "manage.py", "migrate", "--noinput", "-v", "0", "--skip-checks"],
                             cwd=ROOT)
               if migrations_pending(ROOT, DATA) else None)
    # The web server next, beside the schema step only: it spends its first seconds importing (the URL
    # configuration and the statistics behind it), which needs no schema, while migrate mostly waits on
    # PostgreSQL (a fresh clone: 8.0 s of migrate then 5.0 s of web server start, one after the other,
    # 2026-12-06). The workers, the demo loader and the docs build start after it: on 2 cores, starting them
    # beside it made it bind in 21-23 s instead of a few.
    web = console.start("web server", [PY, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload",
                                       "--skip-checks"], cwd=ROOT)
    try:
        if migrate is not None:
            with console.step("Database schema"):
                console.finish(migrate)
            note_migrated(ROOT, DATA)
        with console.step("Web server"):
            console.wait_for_port(int(port), [web])
    except BaseException:
        web.terminate()
        web.wait(timeout=20)
        raise
    # One worker per kind of background work (config/celery.py KINDS): a stuck build never holds up a judge run
    # or the beat's tasks.
    children = [web] + [
        console.start(f"Celery worker ({name})", [PY, "-m", "celery", "-A", "config", "worker", "-Q", queues, "-c",
                                                  str(concurrency), "-n", f"{name}@%h", "--loglevel", "INFO"],
                      cwd=ROOT)
        for name, queues, concurrency in WORKERS
    ] + [
        # The scheduler of config.celery's beat_schedule (e.g. the retention purge), beside the worker.
        console.start("Celery beat", [PY, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                                      "--schedule", str(DATA / "celerybeat-schedule")], cwd=ROOT),
    ]
    # The demo judges' endpoint (judges/simulation.py demo_judge_endpoint): a loopback fake model server,
    # so a judge run started from the demo's pages has something to talk to. Optional: not watched.
    helpers = [console.start("demo judge server", [PY, "-m", "judges.fakeserver", "--port", judge_port,
                                                   "--latency-ms", "20"], cwd=ROOT)]
    demo = console.start("demo", [PY, "manage.py", "load_demo"], cwd=ROOT)
    # CONCORD_DOCS_BUILD=0 leaves the site as it is (a slow machine; the test of make run, which must not
    # rebuild site/ under the suite's own docs tests).
    docs = docs_build_command(ROOT, PY) if os.environ.get("CONCORD_DOCS_BUILD", "1") != "0" else None
    docs_job = console.start("docs site", docs, cwd=ROOT) if docs else None
    console.serving(f"http://127.0.0.1:{port}/", docs_building=docs_job is not None)
    stop = {"now": False}

    def _stop(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    while not stop["now"] and all(child.poll() is None for child in children):
        console.report_finished(demo, "Demo studies ready", "The demo did not load")
        if docs_job is not None:
            console.report_finished(docs_job, "Documentation site built (/docs/)",
                                    "The documentation site did not build; /docs/ serves the last build")
        time.sleep(0.5)
    if not stop["now"]:  # after Ctrl-C, a child stopped mid-import is no failure
        console.report_exits(children)
    for child in children + helpers + [demo] + ([docs_job] if docs_job else []):
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    for child in children + helpers + [demo] + ([docs_job] if docs_job else []):
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
    print("Concord stopped.")
    return 0


def _bytecode_kept() -> None:
    """`make run` starts a web server, workers and the demo loader; the suite and the benches start a few hundred
    Python processes (servers, workers, commands). Where PYTHONDONTWRITEBYTECODE is set, each compiled every
    module of ours it imported again: 0.7-1.2 s of CPU a server or command start on the 2-core machine
    (2026-11-29). Their bytecode is kept as Python keeps it by default, in __pycache__ folders that git ignores;
    the libraries' own was written when they were installed."""
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
