"""Reusable parts of the load benchmarks and fault runs: a study with raters logged in by session,
gunicorn started and stopped as a real server, the raters' answers, a rater that retries through
faults, and the database audit.

    port = free_port()
    slug, sessions = setup_study(n_items, secret_key, raters=20, raters_per_item=3)
    server = start_server(port, secret_key, db_name=name)          # or database_url=... for another server
    stats = LoadStats(); await resilient_rater(i, base, slug, sessions[i], stats, deadline)
    stop_server(server)
    audit(slug, stats.acknowledged)

Django must be set up and pointed at the study's database (bench.dbtools.bench_database does both).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import random
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from bench.collected_static import collected_static_root  # noqa: F401  (the benches and tests take it from here)

ROOT = Path(__file__).resolve().parent.parent
LIKERT = ["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"]
RATINGS_PER_SUBMIT = 15  # rrgen-001: 3 responses x (4 Likert criteria + decision); highlights not counted

# gunicorn's flags after --bind: kept here so that every load run serves the same way (tune here).
GUNICORN_ARGS = ["--workers", "4", "--worker-class", "gthread", "--threads", "4", "--log-level", "warning",
                 "--backlog", "512"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def items_jsonl(n: int) -> str:
    rng = random.Random(7)
    words = "the room was clean but the staff at the front desk were slow and breakfast was cold".split()
    lines = []
    for i in range(n):
        review = " ".join(rng.choice(words) for _ in range(30))
        lines.append(json.dumps({
            "id": f"bench-{i:06d}", "context": f"Review {i}: {review}.",
            "outputs": [{"system": f"model-{s}", "content": f"Thank you for review {i}. " + " ".join(
                rng.choice(words) for _ in range(40))} for s in "abc"],
        }))
    return "\n".join(lines) + "\n"


def setup_study(n_items: int, secret_key: str, *, raters: int, raters_per_item: int,
                name: str = "bench annotator loop", user_prefix: str = "bench-rater",
                fill: Callable[[Any, int], None] | None = None) -> tuple[str, list[str]]:
    """An open rrgen-001 study, its items and `raters` annotators with sessions signed with the
    server's secret key; returns (slug, session keys). The items are imported from a JSONL file,
    or written by `fill(study, n_items)` (bench.rated_study.fill_items: millions in minutes)."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from annotation.models import StudyMember
    from annotation.services.items import items_import
    from annotation.services.studies import study_create, study_set_status
    from rubrics.services import rubric_presets_install

    versions = {v.rubric.slug: v for v in rubric_presets_install()}
    study = study_create(name=name, rubric_version=versions["rrgen-001"],
                         raters_per_item=raters_per_item, presentation="succession")
    if fill is None:
        items_import(study=study, text=items_jsonl(n_items), filename="items.jsonl")
    else:
        fill(study, n_items)
    study_set_status(study=study, status="open")
    User = get_user_model()
    users = User.objects.bulk_create([User(username=f"{user_prefix}-{i:03d}", password="!unusable")
                                      for i in range(raters)])
    StudyMember.objects.bulk_create([StudyMember(study=study, user=u, role="annotator") for u in users])
    sessions = []
    own_key, settings.SECRET_KEY = settings.SECRET_KEY, secret_key  # session data and auth hash are signed
    try:
        for user in users:
            # Logged in by session, as a browser is after the login form (without the password hashing cost).
            store = SessionStore()
            store[SESSION_KEY] = str(user.pk)
            store[BACKEND_SESSION_KEY] = "annotation.auth_backend.ModelBackend"  # axes' backend only throttles
            store[HASH_SESSION_KEY] = user.get_session_auth_hash()
            store.create()
            sessions.append(store.session_key)
    finally:
        settings.SECRET_KEY = own_key
    return study.slug, sessions


# ---------------------------------------------------------------- the server


def start_server(port: int, secret_key: str, *, db_name: str | None = None, database_url: str | None = None,
                 extra_env: dict[str, str] | None = None, gunicorn_args: list[str] | None = None,
                 host: str = "127.0.0.1", ready_within_s: float = 60) -> subprocess.Popen:
    """gunicorn (gunicorn_args, default GUNICORN_ARGS) serving Concord on host:port (a loopback address), in its own
    process group; returns once it answers. The database is `database_url`, or `db_name` on the server of $DATABASE_URL.
    Its stderr goes to a file (server_log_tail reads it): a pipe nobody reads would block it when full."""
    if database_url is None:
        if db_name is None:
            raise ValueError("start_server needs db_name or database_url")
        database_url = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + db_name))
    env = {
        **os.environ, "DATABASE_URL": database_url, "DEBUG": "0", "CONCORD_TESTING": "0",
        "SECRET_KEY": secret_key, "ALLOWED_HOSTS": "127.0.0.1",
        "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0", "LOG_LEVEL": "ERROR", "CONN_MAX_AGE": "600",
        "STATIC_ROOT": str(collected_static_root()),
        **(extra_env or {}),
    }
    cmd = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"{host}:{port}",
           *(GUNICORN_ARGS if gunicorn_args is None else gunicorn_args)]
    log = tempfile.NamedTemporaryFile(prefix="concord-gunicorn-", suffix=".log", delete=False)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    log.close()
    deadline = time.monotonic() + ready_within_s
    # One client for every poll: each new one loads the CA bundle into an SSL context (about 25 ms of CPU)
    with httpx.Client(timeout=2) as poll:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = server_log_tail(proc)
                _remove_log(proc)
                raise RuntimeError("gunicorn exited: " + tail)
            try:
                # Host: the name ALLOWED_HOSTS holds, whichever address the server is bound on
                if poll.get(f"http://{host}:{port}/login/", headers={"Host": "127.0.0.1"}).status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    stop_server(proc)
    raise RuntimeError(f"gunicorn did not answer within {ready_within_s:.0f} s")


def server_log_tail(proc: subprocess.Popen, chars: int = 2000) -> str:
    path = getattr(proc, "log_path", None)
    if path is None or not path.exists():
        return ""
    return path.read_text(errors="replace")[-chars:]


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _remove_log(proc)


def _remove_log(proc: subprocess.Popen) -> None:
    path = getattr(proc, "log_path", None)
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def worker_pids(server: subprocess.Popen) -> list[int]:
    """The gunicorn master's worker processes (its live children)."""
    import psutil

    try:
        children = psutil.Process(server.pid).children()
    except psutil.NoSuchProcess:
        return []
    return [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


# ---------------------------------------------------------------- the raters


def answers(rng: random.Random, responses: list[dict]) -> dict:
    """A complete rrgen-001 answer for the shown responses, sometimes with a highlight."""
    out = {}
    for r in responses:
        block = {k: rng.randint(1, 7) for k in LIKERT}
        block["decision"] = rng.choice(["ACCEPT", "REJECT"])
        if rng.random() < 0.3:
            block["highlights"] = [{"start": 0, "end": 9, "text": r["content"][:9], "label": "relevant"}]
        out[str(r["number"])] = block
    return {"responses": out}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # One for every client: httpx builds a context per client otherwise (milliseconds of CPU each,
    # which at 1,000 raters stalls the event loop for seconds), though the bench speaks plain HTTP.
    return ssl.create_default_context()


def rater_client(base: str, session_key: str, *, timeout: float, lean: bool = False):
    """A logged-in rater's HTTP client (its own connection): session cookie plus a CSRF cookie and header.
    lean: bench.leanhttp's client, which spends a fraction of httpx's CPU (for 1,000 raters on one machine)."""
    csrf = secrets.token_hex(16)  # Django accepts an unmasked 32-character secret in cookie and header
    cookies = {"sessionid": session_key, "csrftoken": csrf}
    headers = {"X-CSRFToken": csrf, "Referer": base + "/"}
    if lean:
        from bench.leanhttp import LeanClient

        return LeanClient(base, cookies=cookies, headers=headers, timeout=timeout)
    return httpx.AsyncClient(base_url=base, cookies=cookies, headers=headers, timeout=timeout, verify=_tls_context())


async def warm_up(base: str, slug: str, session_key: str) -> None:
    """Give every gunicorn worker thread its first requests (URLconf import, DB connection) before
    anything is measured. Reads only: nothing is assigned."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    async with httpx.AsyncClient(base_url=base, cookies={"sessionid": session_key}, timeout=60) as client:
        for _ in range(3):
            await asyncio.gather(*(client.get(f"/studies/{slug}/rate/guidelines/") for _ in range(32)))


RETRY_FIRST_S = 0.05  # backoff: doubled after each failed try up to RETRY_MAX_S, with jitter
RETRY_MAX_S = 1.0
# Generous: a shared 2-core machine can be slow to answer; a request that never gets an answer (a hang)
# still shows up as a timeout.
REQUEST_TIMEOUT_S = 30.0


@dataclass
class LoadStats:
    """What the resilient raters saw; shared by all raters of one run (one event loop, no locks needed)."""

    acknowledged: set[str] = field(default_factory=set)  # tokens whose submit returned 200
    successes: list[tuple[str, float, float]] = field(default_factory=list)  # (kind, sent, answered) monotonic
    retries: Counter = field(default_factory=Counter)  # (kind, reason) -> tries that were repeated
    failed: list[tuple[str, str, float, float]] = field(default_factory=list)  # (kind, reason, sent, answered)
    unexpected: list[str] = field(default_factory=list)  # answers a retry cannot fix (4xx): the rater stops
    inflight_submits: int = 0
    done_raters: int = 0
    gave_up_raters: int = 0

    def interrupted(self, kind: str) -> int:
        """Requests of this kind cut off without an answer (connection lost, timeout)."""
        return sum(n for (k, reason), n in self.retries.items() if k == kind and not reason.startswith("HTTP"))

    def server_errors(self, kind: str | None = None) -> int:
        """5xx answers (to requests of this kind, or of any)."""
        return sum(n for (k, reason), n in self.retries.items() if reason.startswith("HTTP") and kind in (None, k))

    def server_errors_within(self, start: float, end: float = float("inf")) -> int:
        """5xx answers to requests sent at or after `start` and answered before `end` (monotonic)."""
        return sum(1 for _, reason, sent, answered in self.failed
                   if reason.startswith("HTTP") and sent >= start and answered < end)

    def first_success_after(self, when: float, kind: str = "submit") -> float | None:
        """When the first request of this kind sent at or after `when` was answered 200."""
        answered = [end for k, sent, end in self.successes if k == kind and sent >= when]
        return min(answered) if answered else None


async def send_until_answered(client: httpx.AsyncClient, url: str, body: dict | None, *, kind: str,
                              stats: LoadStats, deadline: float, rng: random.Random) -> httpx.Response | None:
    """POST the same request (same URL, same body) until the server answers below 500. A connection
    error, a timeout or a 5xx is retried after a short backoff. None when `deadline` passes first."""
    delay = RETRY_FIRST_S
    while True:
        sent = time.monotonic()
        if kind == "submit":
            stats.inflight_submits += 1
        try:
            resp = await client.post(url, json=body)
            reason = f"HTTP {resp.status_code}"
        except httpx.TransportError as exc:  # refused, reset, closed mid-answer, timed out
            resp, reason = None, type(exc).__name__
        finally:
            if kind == "submit":
                stats.inflight_submits -= 1
        if resp is not None and resp.status_code < 500:
            if resp.status_code == 200:
                stats.successes.append((kind, sent, time.monotonic()))
            return resp
        stats.retries[(kind, reason)] += 1
        stats.failed.append((kind, reason, sent, time.monotonic()))
        if time.monotonic() + delay > deadline:
            return None
        await asyncio.sleep(delay * rng.uniform(0.5, 1.0))
        delay = min(delay * 2, RETRY_MAX_S)


async def resilient_rater(i: int, base: str, slug: str, session_key: str, stats: LoadStats, deadline: float) -> None:
    """A rater at full speed that rides out faults: each request is repeated unchanged until the server
    answers, so a submit cut off mid-flight is sent again with the same token and answers. Stops when
    the study has no more work for it, on an answer a retry cannot fix, or at `deadline`."""
    rng = random.Random(i)
    async with rater_client(base, session_key, timeout=REQUEST_TIMEOUT_S) as client:
        while True:
            resp = await send_until_answered(client, f"/api/studies/{slug}/rate/next/", None, kind="next",
                                             stats=stats, deadline=deadline, rng=rng)
            if resp is None or resp.status_code != 200:
                _stop(stats, "next", resp)
                return
            data = resp.json()
            assignment = data["assignment"]
            if assignment is None:
                if data["state"] == "done":
                    stats.done_raters += 1
                else:
                    stats.unexpected.append(f"next: state {data['state']}")
                return
            body = {"answers": answers(rng, assignment["responses"]), "time_on_task_ms": rng.randint(5000, 15000)}
            url = f"/api/studies/{slug}/rate/{assignment['token']}/submit/"
            resp = await send_until_answered(client, url, body, kind="submit", stats=stats, deadline=deadline, rng=rng)
            if resp is None or resp.status_code != 200:
                _stop(stats, "submit", resp)
                return
            stats.acknowledged.add(assignment["token"])


def _stop(stats: LoadStats, kind: str, resp: httpx.Response | None) -> None:
    if resp is None:
        stats.gave_up_raters += 1
    else:
        stats.unexpected.append(f"{kind}: HTTP {resp.status_code} {resp.text[:200]}")


# ---------------------------------------------------------------- the audit


def audit(slug: str, acknowledged: set[str]) -> dict:
    """Every acknowledged submit stored once and whole, nothing stored unacknowledged, no item over-assigned,
    nobody given an item twice."""
    from django.db import connection

    from annotation.models import Assignment, Study

    study = Study.objects.get(slug=slug)
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM (SELECT item_id FROM annotation_assignment WHERE study_id = %s AND status <> 'expired'
                                     GROUP BY item_id HAVING count(*) > %s) over""", [study.pk, study.raters_per_item])
        over_assigned = cursor.fetchone()[0]
        cursor.execute(
            """SELECT count(*) FROM (SELECT 1 FROM annotation_rating r JOIN annotation_assignment a ON a.id = r.assignment_id
                                     WHERE a.study_id = %s GROUP BY r.assignment_id, r.output_id, r.criterion
                                     HAVING count(*) > 1) dup""", [study.pk])
        duplicated = cursor.fetchone()[0]
        cursor.execute(
            """SELECT a.token::text, count(r.id) FILTER (WHERE r.criterion <> 'highlights')
               FROM annotation_assignment a LEFT JOIN annotation_rating r ON r.assignment_id = a.id
               WHERE a.study_id = %s AND a.status = 'submitted' GROUP BY a.token""", [study.pk])
        submitted = dict(cursor.fetchall())
        cursor.execute(
            """SELECT count(*) FROM (SELECT 1 FROM annotation_assignment WHERE study_id = %s
                                     GROUP BY item_id, rater_id HAVING count(*) > 1) twice""", [study.pk])
        rated_twice = cursor.fetchone()[0]
    lost = [t for t in acknowledged if submitted.get(t) != RATINGS_PER_SUBMIT]
    unacknowledged = set(submitted) - acknowledged
    return {"acknowledged": len(acknowledged), "stored": len(submitted), "lost_or_incomplete": len(lost),
            "stored_not_acknowledged": len(unacknowledged), "duplicate_ratings": duplicated,
            "over_assigned_items": over_assigned, "rater_item_twice": rated_twice,
            "active_left": Assignment.objects.filter(study=study, status="active").count()}
