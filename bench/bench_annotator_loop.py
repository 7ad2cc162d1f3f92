"""The annotator loop under load: 100 simulated raters against gunicorn on PostgreSQL.

Each rater holds a session cookie and loops: POST /api/studies/<slug>/rate/next/, think, POST .../submit/
with a complete RRGen answer (3 responses x 5 criteria, sometimes a highlight). One submit in twenty is
sent twice at once, as a double click would. Two phases:

- human pace: think times drawn from DESIGN.md's 5-15 s per item (times BENCH_THINK_SCALE, default 1;
  a smaller scale shortens the think time and raises the load); targets p95 < 100 ms for next-item
  and submit;
- saturation: no think time; rated items per second (target >= 100/s).

Afterwards the database is audited: every acknowledged submit is present exactly once (15 ratings,
no duplicates), no submit is stored that was not acknowledged, no item has more live assignments than
raters_per_item, and nobody rated an item twice.

    python -m bench annotator_loop            # default size, about 1-2 minutes
    python -m bench annotator_loop --full     # longer phases, more items
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.dbtools import bench_database

ROOT = Path(__file__).resolve().parent.parent
RATERS = 100
RATERS_PER_ITEM = 3
THINK_SECONDS = (5.0, 15.0)  # DESIGN.md: a human rates an item in 5-15 s
# 1.0 is DESIGN.md's pace (100 raters ~ 10 items/s); below 1 the "human" phase is proportionally heavier.
THINK_SCALE = float(os.environ.get("BENCH_THINK_SCALE", "1.0"))
LIKERT = ["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"]
TARGET_P95_MS = 100.0
TARGET_ITEMS_PER_S = 100.0


@dataclass
class Phase:
    name: str
    seconds: float
    think: tuple[float, float] | None
    next_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    acknowledged: set[str] = field(default_factory=set)  # tokens whose submit returned 200
    errors: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    client_cpu_s: float = 0.0
    done_raters: int = 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _items_jsonl(n: int) -> str:
    import json

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


def _setup(n_items: int, secret_key: str) -> tuple[str, list[str]]:
    """A study, its items and RATERS annotators with sessions signed with the server's secret key;
    returns (slug, session keys)."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from annotation.models import StudyMember
    from annotation.services.items import items_import
    from annotation.services.studies import study_create, study_set_status
    from rubrics.services import rubric_presets_install

    versions = {v.rubric.slug: v for v in rubric_presets_install()}
    study = study_create(name="bench annotator loop", rubric_version=versions["rrgen-001"],
                         raters_per_item=RATERS_PER_ITEM, presentation="succession")
    items_import(study=study, text=_items_jsonl(n_items), filename="items.jsonl")
    study_set_status(study=study, status="open")
    User = get_user_model()
    users = User.objects.bulk_create([User(username=f"bench-rater-{i:03d}", password="!unusable") for i in range(RATERS)])
    StudyMember.objects.bulk_create([StudyMember(study=study, user=u, role="annotator") for u in users])
    sessions = []
    own_key, settings.SECRET_KEY = settings.SECRET_KEY, secret_key  # session data and auth hash are signed
    try:
        for user in users:
            # Logged in by session, as a browser is after the login form (without the password hashing cost).
            store = SessionStore()
            store[SESSION_KEY] = str(user.pk)
            store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"  # axes' backend only throttles
            store[HASH_SESSION_KEY] = user.get_session_auth_hash()
            store.create()
            sessions.append(store.session_key)
    finally:
        settings.SECRET_KEY = own_key
    return study.slug, sessions


def _start_server(db_name: str, port: int, secret_key: str) -> subprocess.Popen:
    cfg_url = os.environ["DATABASE_URL"]
    base = cfg_url.rsplit("/", 1)[0]
    env = {
        **os.environ, "DATABASE_URL": f"{base}/{db_name}", "DEBUG": "0", "CONCORD_TESTING": "0",
        "SECRET_KEY": secret_key, "ALLOWED_HOSTS": "127.0.0.1",
        "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0", "LOG_LEVEL": "ERROR", "CONN_MAX_AGE": "600",
    }
    cmd = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
           "--workers", "4", "--worker-class", "gthread", "--threads", "4", "--log-level", "warning", "--keep-alive", "75",
           "--backlog", "512"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("gunicorn exited: " + proc.stderr.read().decode()[-2000:])
        try:
            if httpx.get(f"http://127.0.0.1:{port}/login/", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    _stop_server(proc)
    raise RuntimeError("gunicorn did not answer within 60 s")


def _stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _answers(rng: random.Random, responses: list[dict]) -> dict:
    out = {}
    for r in responses:
        block = {k: rng.randint(1, 7) for k in LIKERT}
        block["decision"] = rng.choice(["ACCEPT", "REJECT"])
        if rng.random() < 0.3:
            block["highlights"] = [{"start": 0, "end": 9, "text": r["content"][:9], "label": "relevant"}]
        out[str(r["number"])] = block
    return {"responses": out}


async def _rater(i: int, base: str, slug: str, session_key: str, phase: Phase, stop_at: float) -> None:
    rng = random.Random(i)
    csrf = secrets.token_hex(16)  # Django accepts an unmasked 32-character secret in cookie and header
    cookies = {"sessionid": session_key, "csrftoken": csrf}
    headers = {"X-CSRFToken": csrf, "Referer": base + "/"}
    async with httpx.AsyncClient(base_url=base, cookies=cookies, headers=headers, timeout=30) as client:
        if phase.think:  # raters arrive over the first think interval, not all in the same millisecond
            await asyncio.sleep(rng.uniform(0, phase.think[1]))
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            try:
                resp = await client.post(f"/api/studies/{slug}/rate/next/")
            except httpx.HTTPError as exc:
                phase.errors.append(f"next: {exc!r}")
                continue
            phase.next_ms.append((time.perf_counter() - t0) * 1000)
            if resp.status_code != 200:
                phase.errors.append(f"next: HTTP {resp.status_code} {resp.text[:200]}")
                await asyncio.sleep(0.5)
                continue
            data = resp.json()
            if data["assignment"] is None:
                phase.done_raters += 1
                return
            assignment = data["assignment"]
            if phase.think:
                await asyncio.sleep(rng.uniform(*phase.think))
            body = {"answers": _answers(rng, assignment["responses"]), "time_on_task_ms": rng.randint(5000, 15000)}
            url = f"/api/studies/{slug}/rate/{assignment['token']}/submit/"
            double = rng.random() < 0.05
            t0 = time.perf_counter()
            try:
                if double:  # a double click: two identical submits at once
                    results = await asyncio.gather(client.post(url, json=body), client.post(url, json=body))
                else:
                    results = [await client.post(url, json=body)]
            except httpx.HTTPError as exc:
                phase.errors.append(f"submit: {exc!r}")
                continue
            phase.submit_ms.append((time.perf_counter() - t0) * 1000)
            if all(r.status_code == 200 for r in results):
                phase.acknowledged.add(assignment["token"])
            else:
                phase.errors.append(f"submit: HTTP {[r.status_code for r in results]} {results[0].text[:200]}")


async def _run_phase(base: str, slug: str, sessions: list[str], phase: Phase) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request otherwise
    phase.started, cpu = time.perf_counter(), time.process_time()
    stop_at = phase.started + phase.seconds
    await asyncio.gather(*(_rater(i, base, slug, key, phase, stop_at) for i, key in enumerate(sessions)))
    phase.ended = time.perf_counter()
    phase.client_cpu_s = time.process_time() - cpu


async def _warm_up(base: str, slug: str, sessions: list[str]) -> None:
    """Give every gunicorn worker thread its first requests (URLconf import, DB connection) before
    anything is measured. Reads only: nothing is assigned."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    async with httpx.AsyncClient(base_url=base, cookies={"sessionid": sessions[0]}, timeout=60) as client:
        for _ in range(3):
            await asyncio.gather(*(client.get(f"/studies/{slug}/rate/guidelines/") for _ in range(32)))


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def _audit(slug: str, acknowledged: set[str]) -> dict:
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
    lost = [t for t in acknowledged if submitted.get(t) != 15]
    unacknowledged = set(submitted) - acknowledged
    return {"acknowledged": len(acknowledged), "stored": len(submitted), "lost_or_incomplete": len(lost),
            "stored_not_acknowledged": len(unacknowledged), "duplicate_ratings": duplicated,
            "over_assigned_items": over_assigned, "rater_item_twice": rated_twice,
            "active_left": Assignment.objects.filter(study=study, status="active").count()}


def run(full: bool = False) -> dict:
    human_s, saturation_s, n_items = (120.0, 60.0, 20_000) if full else (40.0, 20.0, 4_000)
    think = (THINK_SECONDS[0] * THINK_SCALE, THINK_SECONDS[1] * THINK_SCALE)
    phases = [Phase("human pace", human_s, think), Phase("saturation", saturation_s, None)]
    with bench_database("annotator") as db_name:
        secret_key = secrets.token_urlsafe(40)
        slug, sessions = _setup(n_items, secret_key)
        port = _free_port()
        server = _start_server(db_name, port, secret_key)
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(_warm_up(base, slug, sessions))
            for phase in phases:
                asyncio.run(_run_phase(base, slug, sessions, phase))
        finally:
            _stop_server(server)
        audit = _audit(slug, set().union(*(p.acknowledged for p in phases)))
    rows = []
    for phase in phases:
        duration = phase.ended - phase.started
        for label, values in (("next item", phase.next_ms), ("submit", phase.submit_ms)):
            for q in (50, 95, 99):
                target = f"< {TARGET_P95_MS:.0f} ms" if q == 95 and phase.think else None
                value = _pct(values, q)
                rows.append({"metric": f"{phase.name}: {label} p{q}", "value": value, "unit": "ms",
                             "target": target, "ok": (value < TARGET_P95_MS) if target else None})
        rate = len(phase.acknowledged) / duration if duration else 0.0
        is_saturation = phase.think is None
        rows.append({"metric": f"{phase.name}: rated items/s", "value": rate, "unit": "items/s",
                     "target": f">= {TARGET_ITEMS_PER_S:.0f}" if is_saturation else None,
                     "ok": rate >= TARGET_ITEMS_PER_S if is_saturation else None})
        rows.append({"metric": f"{phase.name}: requests failed", "value": float(len(phase.errors)), "unit": "",
                     "target": "0", "ok": not phase.errors})
        # The simulated raters share the machine with the server; this is their share of it.
        rows.append({"metric": f"{phase.name}: load generator CPU", "value": phase.client_cpu_s / duration,
                     "unit": "cores", "target": None, "ok": None})
    for key, label in (("lost_or_incomplete", "acknowledged submits lost or incomplete"),
                       ("duplicate_ratings", "duplicated ratings"),
                       ("stored_not_acknowledged", "submits stored but not acknowledged"),
                       ("over_assigned_items", "over-assigned items"),
                       ("rater_item_twice", "raters given an item twice")):
        rows.append({"metric": f"audit: {label}", "value": float(audit[key]), "unit": "", "target": "0",
                     "ok": audit[key] == 0})
    rows.append({"metric": "audit: acknowledged submits", "value": float(audit["acknowledged"]), "unit": "items",
                 "target": None, "ok": None})
    return {
        "name": "annotator_loop", "rows": rows, "audit": audit,
        "config": {"raters": RATERS, "raters_per_item": RATERS_PER_ITEM, "items": n_items,
                   "think_s": think, "phases_s": [p.seconds for p in phases],
                   "server": "gunicorn 4 workers x 4 threads (gthread), DEBUG=0", "client": "asyncio + httpx",
                   "double_submit_share": 0.05},
        "samples": {p.name: {"next": len(p.next_ms), "submit": len(p.submit_ms), "errors": p.errors[:20]}
                    for p in phases},
    }

