"""Label Studio (label-studio on PyPI, github.com/HumanSignal/label-studio) under Concord's annotator-loop load.

Measures rated items per second at saturation (raters with no think time), the server's CPU per rated
item, and afterwards audits the annotations in its PostgreSQL database: acknowledged but not stored
(lost), a task annotated twice by the same rater, tasks annotated by more raters than the overlap.

    .venv/bin/python -m bench.peers label_studio [--items 4000] [--seconds 60] [--raters 100]

The task mirrors Concord's rrgen-001 screen: a labeling config shows the review and three responses
and asks, for each response, four 1-5 <Rating>s and an ACCEPT/REJECT <Choices>: 15 answers per item
(bench.loadclient.items_jsonl's items). The project sets maximum_annotations 3 (each task's overlap)
and "Sequential sampling"; /next hands a rater one task at a time under a task lock, and never a task
the rater has already annotated.

Label Studio is served by gunicorn (4 workers x 4 threads, as Concord in its bench) on its WSGI
application after its manage.py has migrated a fresh PostgreSQL database (DJANGO_DB=default, POSTGRE_* variables; PG* variables
or the defaults say where PostgreSQL is). Everyone signs up through the sign-up form (which logs them
in and puts them in the one organization); the first account creates the project and imports the
tasks through the REST API. Each rater then does what the labeling stream does per item: GET
/api/projects/<id>/next, POST /api/tasks/<task>/annotations/ with the whole result. Two requests per
rated item; Concord's browser loop needs one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import secrets
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from bench.loadclient import LIKERT, free_port, items_jsonl
from bench.peers import (PeerUnavailable, RaterTally, installed_version, log_tail, measured_client, peer_python,
                         process_tree_cpu_s, send, start_process, stop_process)

REQUIREMENTS = ["label-studio==1.23.2", "gunicorn==27.0.1"]  # gunicorn: the version Concord's bench serves with
GUNICORN_ARGS = ["--workers", "4", "--worker-class", "gthread", "--threads", "4", "--timeout", "120"]
DB_NAME = "peer_label_studio"
RATERS_PER_ITEM = 3
RESPONSES = (1, 2, 3)
DECISIONS = ("ACCEPT", "REJECT")
REQUEST_TIMEOUT_S = 60.0
WARM_UP_S = 5.0
SIGN_UP_CONCURRENCY = 2  # each sign-up hashes a password (PBKDF2, a million rounds): one per core


def pg_settings() -> dict[str, str]:
    return {"host": os.environ.get("PGHOST", "127.0.0.1"), "port": os.environ.get("PGPORT", "5432"),
            "user": os.environ.get("PGUSER", "postgres"), "password": os.environ.get("PGPASSWORD", "")}


@contextlib.contextmanager
def fresh_database():
    """DB_NAME, empty; dropped afterwards."""
    import psycopg

    pg = pg_settings()
    with psycopg.connect(dbname="postgres", autocommit=True, **pg) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")
    try:
        yield
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **pg) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


# ---------------------------------------------------------------- the project


def labeling_config() -> str:
    lines = ["<View>", '<Header value="Review"/>', '<Text name="review" value="$review"/>']
    for n in RESPONSES:
        lines += [f'<Header value="Response {n}"/>', f'<Text name="response_{n}" value="$response_{n}"/>']
        lines += [f'<Rating name="{criterion}_r{n}" toName="response_{n}" maxRating="5" required="true"/>'
                  for criterion in LIKERT]
        lines.append(f'<Choices name="decision_r{n}" toName="response_{n}" choice="single" required="true">'
                     + "".join(f'<Choice value="{d}"/>' for d in DECISIONS) + "</Choices>")
    return "\n".join([*lines, "</View>"])


def tasks(n_items: int) -> list[dict]:
    out = []
    for line in items_jsonl(n_items).splitlines():
        item = json.loads(line)
        row = {"item": item["id"], "review": item["context"]}
        row.update({f"response_{n}": output["content"] for n, output in zip(RESPONSES, item["outputs"])})
        out.append(row)
    return out


def result(rng: random.Random) -> list[dict]:
    """A complete answer as the labeling frontend submits it: one region per control."""
    out = []
    for n in RESPONSES:
        out += [{"from_name": f"{criterion}_r{n}", "to_name": f"response_{n}", "type": "rating",
                 "value": {"rating": rng.randint(1, 5)}, "origin": "manual"} for criterion in LIKERT]
        out.append({"from_name": f"decision_r{n}", "to_name": f"response_{n}", "type": "choices",
                    "value": {"choices": [rng.choice(DECISIONS)]}, "origin": "manual"})
    return out


def signature(regions: list[dict]) -> list[tuple[str, str]]:
    """What an answer says, comparable between what was sent and what was stored."""
    return sorted((r["from_name"], json.dumps(r["value"], sort_keys=True)) for r in regions)


# ---------------------------------------------------------------- the server


def start_server(python: Path, data_dir: Path, port: int):
    """Migrate the empty database with Label Studio's manage.py, then serve its WSGI application with
    gunicorn as Concord's bench serves Concord (4 workers x 4 threads): a production server, where
    `label-studio start` would be Django's threaded development server in one process."""
    pg = pg_settings()
    package = Path(subprocess.run([str(python), "-c", "import label_studio, os; print(os.path.dirname(label_studio.__file__))"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    env = {**os.environ, "DJANGO_DB": "default", "POSTGRE_NAME": DB_NAME, "POSTGRE_HOST": pg["host"],
           "POSTGRE_PORT": pg["port"], "POSTGRE_USER": pg["user"], "POSTGRE_PASSWORD": pg["password"],
           "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir), "SECRET_KEY": secrets.token_urlsafe(40),
           "DJANGO_SETTINGS_MODULE": "core.settings.label_studio", "DEBUG": "false",
           "LATEST_VERSION_CHECK": "false"}  # else it asks pypi.org for a newer version at start
    # The first migration of the empty database takes minutes on a small machine.
    migrated = subprocess.run([str(python), "manage.py", "migrate", "--noinput"], cwd=package, env=env,
                              capture_output=True, text=True, timeout=900)
    if migrated.returncode != 0:
        raise PeerUnavailable(f"Label Studio's migrations failed: {migrated.stderr[-400:]!r}")
    cmd = [str(python.parent / "gunicorn"), "--bind", f"127.0.0.1:{port}", *GUNICORN_ARGS, "--chdir", str(package),
           "core.wsgi:application"]
    return start_process(cmd, cwd=data_dir, env=env, log_path=data_dir / "server.log",
                         ready_url=f"http://127.0.0.1:{port}/health", timeout_s=300)


# ---------------------------------------------------------------- the raters


def rater_email(i: int) -> str:
    return f"peer-rater-{i:03d}@peer.invalid"


async def sign_up(client: httpx.AsyncClient, email: str) -> None:
    """The sign-up form (which logs the client in); afterwards the client sends Django's CSRF header."""
    await client.get("/user/signup/")
    form = {"email": email, "password": f"pw-{secrets.token_hex(8)}", "csrfmiddlewaretoken": client.cookies["csrftoken"]}
    resp = await client.post("/user/signup/", data=form, headers={"Referer": f"{client.base_url}/user/signup/"})
    if resp.status_code != 302:
        raise RuntimeError(f"signing up {email}: HTTP {resp.status_code} {resp.text[:200]}")
    client.headers.update({"X-CSRFToken": client.cookies["csrftoken"], "Referer": f"{client.base_url}/"})


async def sign_up_all(clients: list[httpx.AsyncClient]) -> None:
    gate = asyncio.Semaphore(SIGN_UP_CONCURRENCY)

    async def one(i: int, client: httpx.AsyncClient) -> None:
        async with gate:
            await sign_up(client, rater_email(i))

    await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))


async def create_project(owner: httpx.AsyncClient, n_items: int) -> int:
    resp = await owner.post("/api/projects/", json={"title": "Concord peer bench", "label_config": labeling_config(),
                                                    "maximum_annotations": RATERS_PER_ITEM,
                                                    "sampling": "Sequential sampling", "show_skip_button": False})
    resp.raise_for_status()
    project = resp.json()["id"]
    (await owner.post(f"/api/projects/{project}/import", json=tasks(n_items))).raise_for_status()
    return project


async def warm_up(client: httpx.AsyncClient, project: int) -> None:
    """Reads only (a /next would lock a task): first requests to every server thread's code paths."""
    deadline = time.monotonic() + WARM_UP_S
    while time.monotonic() < deadline:
        await asyncio.gather(*(client.get(f"/api/projects/{project}/") for _ in range(16)))


async def rater(i: int, client: httpx.AsyncClient, project: int, tally: RaterTally, stop_at: float) -> None:
    """One rater at full speed, as the labeling stream works: next task, submit the whole result."""
    rng = random.Random(i)
    while time.perf_counter() < stop_at:
        task = await send(tally, "next", client.get(f"/api/projects/{project}/next"), (200, 404))
        if task is None:
            await asyncio.sleep(0.5)
            continue
        if task.status_code == 404:  # no task left for this rater
            tally.done_raters += 1
            return
        task_id, regions = task.json()["id"], result(rng)
        body = {"result": regions, "lead_time": rng.uniform(5, 15), "project": str(project), "draft_id": None,
                "parent_prediction": None, "parent_annotation": None}
        saved = await send(tally, "submit", client.post(f"/api/tasks/{task_id}/annotations/?project={project}",
                                                        json=body), (201,))
        if saved is not None:
            tally.acknowledged[saved.json()["id"]] = (rater_email(i), task_id, signature(regions))


async def drive(base: str, n_items: int, raters: int, seconds: float, server_pid: int, lean: bool = True) -> dict:
    """Sign everyone up, create the project, warm up, then run the raters for `seconds` (with bench.leanhttp
    where `lean`)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    async with contextlib.AsyncExitStack() as stack:
        owner = await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=REQUEST_TIMEOUT_S))
        await sign_up(owner, "peer-owner@peer.invalid")
        project = await create_project(owner, n_items)
        clients = [await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=REQUEST_TIMEOUT_S))
                   for _ in range(raters)]
        await sign_up_all(clients)
        await warm_up(clients[0], project)
        measured = [await stack.enter_async_context(measured_client(c, lean=lean, headers=("X-CSRFToken", "Referer"),
                                                                    timeout=REQUEST_TIMEOUT_S)) for c in clients]
        tally = RaterTally()
        server_cpu, client_cpu, started = process_tree_cpu_s(server_pid), time.process_time(), time.perf_counter()
        await asyncio.gather(*(rater(i, c, project, tally, started + seconds) for i, c in enumerate(measured)))
        window = time.perf_counter() - started
        return {"tally": tally, "project": project, "window_s": window,
                "server_cpu_s": process_tree_cpu_s(server_pid) - server_cpu,
                "client_cpu_s": time.process_time() - client_cpu}


# ---------------------------------------------------------------- the audit


def audit(project: int, acknowledged: dict[int, tuple[str, int, list]]) -> dict:
    import psycopg

    with psycopg.connect(dbname=DB_NAME, **pg_settings()) as conn:
        stored = {row[0]: (row[1], row[2], row[3]) for row in conn.execute(
            """SELECT a.id, u.email, a.task_id, a.result FROM task_completion a JOIN htx_user u ON u.id = a.completed_by_id
               WHERE a.project_id = %s AND NOT a.was_cancelled""", [project])}
        over_annotated = conn.execute(
            """SELECT count(*) FROM (SELECT task_id FROM task_completion WHERE project_id = %s AND NOT was_cancelled
                                     GROUP BY task_id HAVING count(DISTINCT completed_by_id) > %s) over""",
            [project, RATERS_PER_ITEM]).fetchone()[0]
        rated_twice = conn.execute(
            """SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) n FROM task_completion WHERE project_id = %s
                                                   GROUP BY task_id, completed_by_id HAVING count(*) > 1) twice""",
            [project]).fetchone()[0]
    lost = sum(1 for key, (email, task, sent) in acknowledged.items()
               if key not in stored or stored[key][:2] != (email, task) or signature(stored[key][2]) != sent)
    return {"acknowledged": len(acknowledged), "stored": len(stored), "lost_or_incomplete": lost,
            "stored_not_acknowledged": len(set(stored) - set(acknowledged)), "rater_task_twice": int(rated_twice),
            "over_annotated_tasks": over_annotated}


# ---------------------------------------------------------------- the run


def run(items: int, seconds: float, raters: int, lean: bool = True) -> dict:
    python = peer_python("label_studio", REQUIREMENTS)
    version = installed_version(python, "label-studio")
    print(f"label-studio {version} in {python.parent.parent}", flush=True)
    with tempfile.TemporaryDirectory(prefix="peer-label-studio-") as tmp, fresh_database():
        data_dir = Path(tmp)
        port = free_port()
        server = start_server(python, data_dir, port)
        try:
            measured = asyncio.run(drive(f"http://127.0.0.1:{port}", items, raters, seconds, server.pid, lean))
        finally:
            stop_process(server)
        tally = measured["tally"]
        if tally.failed:  # the log goes with the temporary directory
            print(f"label-studio server log, last lines:\n{log_tail(data_dir / 'server.log')}", flush=True)
        checked = audit(measured["project"], tally.acknowledged)
    rated = len(tally.acknowledged)
    return {
        "name": "label_studio", "version": version, "client": "bench.leanhttp" if lean else "httpx", "items": items,
        "raters": raters, "seconds": seconds,
        "rated_items_per_s": rated / measured["window_s"],
        "cpu_ms_per_item": 1000 * measured["server_cpu_s"] / max(rated, 1),
        "lost": checked["lost_or_incomplete"], "duplicated": checked["rater_task_twice"],
        "over_assigned": checked["over_annotated_tasks"], "failed_requests": tally.failed_requests(),
        "window_s": round(measured["window_s"], 2), "rated_items": rated, "requests": tally.requests,
        "done_raters": tally.done_raters, "failures": dict(tally.failed),
        "load_generator_cpu_ms_per_item": 1000 * measured["client_cpu_s"] / max(rated, 1), "audit": checked,
        "notes": [
            "server: gunicorn 4 workers x 4 threads (gthread) on core.wsgi, PostgreSQL backend; "
            "cpu_ms_per_item is gunicorn's process tree: PostgreSQL's share is not measured (a connection per "
            "request, CONN_MAX_AGE unset, so the backends are too short-lived to sample)",
            "a request in flight holds a PostgreSQL connection: at saturation up to --raters of them, "
            "against the server's max_connections",
            "2 requests per rated item (GET /api/projects/<id>/next, POST /api/tasks/<id>/annotations/)",
            f"assignment: maximum_annotations {RATERS_PER_ITEM} (task overlap), Sequential sampling, task locks",
            "over_assigned counts tasks annotated by more raters than the overlap (locks are not kept after the run)",
            "accounts made through the sign-up form; the first creates the project and imports the tasks",
        ],
    }
