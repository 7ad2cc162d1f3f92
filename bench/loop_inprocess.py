"""Where the web process's CPU for a rated item goes, with no HTTP server and no other load: the rating loop's
two requests (next, then submit) run in this process, the arms interleaved in blocks of 25 items so that the
machine's drift (bench/machine_speed.py) falls on every arm alike. Each arm's PostgreSQL CPU is read from its
backend's /proc entry where PostgreSQL runs on this machine.

- "WSGI, every middleware": Django's WSGI handler as gunicorn calls it, with settings.MIDDLEWARE;
- "WSGI, the loop's middleware only": the same without the middleware the JSON loop does not use (WhiteNoise,
  locale, common, messages, X-Frame-Options, htmx, django-axes): what a handler of its own for the loop would save.
  Both read the session's user in the loop's first statement (annotation.loop_auth);
- "services after reading the session and its user": the services below, each request's user read from its
  session as Django's session auth does it (the session from Redis, the user by a statement of its own);
- "services alone": the loop's own work, the same calls the views make (the access statements, the phase and
  assignment engine, the answer check and store, the payload) for users already loaded: no session, no user
  read, no middleware, DRF or URL resolution.

    python -m bench.loop_inprocess          -> bench/results/loop_inprocess.json
"""

from __future__ import annotations

import io
import json
import os
import random
import resource
import secrets
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
WARM, ITEMS, BLOCK = 60, 1000, 25
KEEP = ("SecurityMiddleware", "SessionMiddleware", "CsrfViewMiddleware", "AuthenticationMiddleware",
        "DatabaseUnavailableMiddleware")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _backend_cpu_s(pid: int | None) -> float:
    """CPU seconds of the PostgreSQL backend serving this process (one connection: the arms' own), read from
    /proc; 0.0 where PostgreSQL runs elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _wsgi_arm(app, slug: str, sessions: list[str], rng: random.Random):
    from bench.loadclient import answers

    csrf = "a" * 32  # an unmasked secret in cookie and header, as bench.loadclient's raters send

    def call(path: str, session: str, body: bytes = b"") -> dict:
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
                   "SERVER_PORT": "8000", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
                   "wsgi.errors": sys.stderr, "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
                   "HTTP_HOST": "127.0.0.1:8000", "HTTP_REFERER": "http://127.0.0.1:8000/",
                   "HTTP_COOKIE": f"sessionid={session}; csrftoken={csrf}", "HTTP_X_CSRFTOKEN": csrf}
        status = []
        body_out = b"".join(app(environ, lambda s, headers, exc=None: status.append(s)))
        if not status[0].startswith("200"):
            raise RuntimeError(f"{path}: {status[0]} {body_out[:300]!r}")
        return json.loads(body_out)

    def item(i: int) -> None:
        session = sessions[i % len(sessions)]
        shown = call(f"/api/studies/{slug}/rate/next/", session)["assignment"]
        body = json.dumps({"answers": answers(rng, shown["responses"]), "time_on_task_ms": 1000}).encode()
        call(f"/api/studies/{slug}/rate/{shown['token']}/submit/", session, body)

    return item


def _services_arm(slug: str, users: list, rng: random.Random, sessions: list[str] | None = None):
    """The views' calls for loaded users; with `sessions`, each request first reads its session and user as
    Django's session auth does (the session from the cache, the user by annotation.auth_backend)."""
    from django.contrib.auth import get_user
    from django.http import HttpRequest

    from annotation.access import get_study_and_own_assignment, get_study_for_annotator
    from annotation.services.phases import phase_require
    from annotation.services.ratings import assignment_submit
    from annotation.views.workspace_api import next_payload
    from bench.loadclient import answers

    def signed_in(i: int):
        if sessions is None:
            return users[i % len(users)]
        from importlib import import_module

        from django.conf import settings

        request = HttpRequest()
        request.session = import_module(settings.SESSION_ENGINE).SessionStore(sessions[i % len(sessions)])
        return get_user(request)

    def item(i: int) -> None:
        user = signed_in(i)
        shown = next_payload(get_study_for_annotator(user, slug), user)["assignment"]
        json.dumps(shown)
        user = signed_in(i)
        study, assignment = get_study_and_own_assignment(user, slug, shown["token"])
        phase_require(study=study, rater=user, assignment=assignment)
        assignment_submit(assignment=assignment, answers=answers(rng, shown["responses"]), time_on_task_ms=1000)

    return item


def measure(slug: str, sessions: list[str], users: list, *, items: int = ITEMS, warm: int = WARM) -> dict:
    """{arm: (web CPU seconds, SQL statements, of which reads of the signed-in user, PostgreSQL CPU seconds)} over
    `items` rated items an arm, in the current database, whose study `slug` has the raters `users` signed in by `sessions`
    (bench.loadclient.setup_study)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    every = list(settings.MIDDLEWARE)
    handlers = {}
    try:
        for name, middleware in (("WSGI, every middleware", every),
                                 ("WSGI, the loop's middleware only", [m for m in every if m.rsplit(".", 1)[-1] in KEEP])):
            settings.MIDDLEWARE = middleware
            handlers[name] = WSGIHandler()
    finally:
        settings.MIDDLEWARE = every
    rng = random.Random(1)
    arms = {name: _wsgi_arm(app, slug, sessions, rng) for name, app in handlers.items()}
    arms["services after reading the session and its user"] = _services_arm(slug, users, rng, sessions)
    arms["services alone"] = _services_arm(slug, users, rng)
    statements = [0, 0]
    user_read = f"FROM {get_user_model()._meta.db_table} u WHERE u.id = "  # annotation.auth_backend's statement

    def count(execute, sql, params, many, context):
        statements[0] += 1
        statements[1] += user_read in sql
        return execute(sql, params, many, context)

    i = 0
    for item in arms.values():
        for _ in range(warm):
            item(i)
            i += 1
    # One connection for the whole measurement (CONN_MAX_AGE would replace it every minute), so that its backend's
    # CPU is every arm's; gunicorn's connections are as long-lived.
    max_age, connection.settings_dict["CONN_MAX_AGE"] = connection.settings_dict["CONN_MAX_AGE"], None
    connection.close()
    connection.ensure_connection()
    backend = connection.connection.info.backend_pid
    spent = dict.fromkeys(arms, 0.0)
    db_spent = dict.fromkeys(arms, 0.0)
    counted = {name: [0, 0] for name in arms}
    for _ in range(max(items // BLOCK, 1)):
        for name, item in arms.items():
            statements[:] = [0, 0]
            with connection.execute_wrapper(count):
                started, db_started = _cpu_s(), _backend_cpu_s(backend)
                for _ in range(min(BLOCK, items)):
                    item(i)
                    i += 1
                spent[name] += _cpu_s() - started
                db_spent[name] += _backend_cpu_s(backend) - db_started
            counted[name][0] += statements[0]
            counted[name][1] += statements[1]
    connection.settings_dict["CONN_MAX_AGE"] = max_age
    assert connection.connection.info.backend_pid == backend, "the connection was replaced during the measurement"
    return {name: (spent[name], *counted[name], db_spent[name]) for name in arms}


def run() -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from bench.__main__ import machine
    from bench.dbtools import bench_database
    from bench.loadclient import setup_study
    from bench.machine_speed import probe_ms

    probe_before = probe_ms()
    with bench_database("inprocess") as _:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(ITEMS * 3, secret_key, raters=30, raters_per_item=3, user_prefix="inproc")
        settings.SECRET_KEY, settings.ALLOWED_HOSTS = secret_key, ["*"]
        users = list(get_user_model().objects.filter(username__startswith="inproc").order_by("username"))
        spent = measure(slug, sessions, users)
    rows = []
    for name, (cpu_s, statements, user_reads, db_cpu_s) in spent.items():
        rows.append({"metric": f"{name}: web CPU a rated item", "value": 1000 * cpu_s / ITEMS, "unit": "ms"})
        rows.append({"metric": f"{name}: PostgreSQL CPU a rated item", "value": 1000 * db_cpu_s / ITEMS, "unit": "ms"})
        rows.append({"metric": f"{name}: SQL statements a rated item", "value": statements / ITEMS, "unit": ""})
        rows.append({"metric": f"{name}: of which reads of the signed-in user", "value": user_reads / ITEMS, "unit": ""})
    return {"name": "loop_inprocess", "rows": rows, "items_per_arm": ITEMS, "machine": machine(probe_before),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


if __name__ == "__main__":
    out = run()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "loop_inprocess.json").write_text(json.dumps(out, indent=2) + "\n")
    for row in out["rows"]:
        print(f"{row['metric']:<60} {row['value']:8.3f} {row['unit']}")
    print("machine speed (CPU ms, lower is faster):", out["machine"]["python_probe_ms"])
