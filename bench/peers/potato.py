"""Potato (potato-annotation, github.com/davidjurgens/potato) under Concord's annotator-loop load.

Measures rated items per second at saturation (raters with no think time), the server's CPU per rated
item, and afterwards audits Potato's stored annotations: acknowledged but not stored (lost), answers
stored twice, items held by more raters than the quota.

    .venv/bin/python -m bench.peers potato [--items 4000] [--seconds 60] [--raters 100]

The task mirrors Concord's rrgen-001 screen: an item shows a review and three responses, and the rater
answers, for each response, four 1-5 Likert scales and an ACCEPT/REJECT decision, one scheme per
question (semantic_relevance_r1 ... decision_r3): 15 answers per item. The items are
bench.loadclient.items_jsonl's. Each item goes to 3 raters (num_annotators_per_item: 3); the
assignment walks the items in order (assignment_strategy: fixed_order, Potato's default) and hands a
rater one item at a time (max_annotations_per_user: -1), and an item a rater holds or has annotated
is never handed to them again.

Potato is served as its Docker image serves it: gunicorn on the create_app factory, one worker with
8 threads (its item pool and user state live in process memory, so the image refuses a second
worker). Raters sign up through the registration form (which logs them in), then do what the page's
script does for an item: GET /annotate (the page), POST /updateinstance (every answer, as the Next
button's save sends them), POST /annotate {"action": "next_instance"} with X-Potato-Navigation: 1.
Three requests per rated item; Concord's browser loop needs one.

Potato stores each rater's annotations in <output_annotation_dir>/<rater>/user_state.json, rewritten
whole (and fsynced) on every save; the audit reads those files after the server has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import re
import secrets
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx

from bench.loadclient import LIKERT, free_port, items_jsonl
from bench.peers import (RaterTally, installed_version, log_tail, measured_client, peer_python, process_tree_cpu_s,
                         send, start_process, stop_process)

REQUIREMENTS = ["potato-annotation==2.12.1", "gunicorn==27.0.1"]  # gunicorn: the version Concord's bench serves with
RATERS_PER_ITEM = 3
RESPONSES = (1, 2, 3)
DECISIONS = ("ACCEPT", "REJECT")
ANSWERS_PER_ITEM = len(RESPONSES) * (len(LIKERT) + 1)
# Potato's image (Dockerfile, docker-entrypoint.sh): GUNICORN_WORKERS=1, GUNICORN_THREADS=8, timeout 120.
GUNICORN_ARGS = ["--workers", "1", "--threads", "8", "--timeout", "120"]
NAVIGATION_HEADERS = {"X-Potato-Navigation": "1"}  # annotation.js: asks for a short JSON answer to Next
REQUEST_TIMEOUT_S = 30.0
WARM_UP_S = 5.0
INSTANCE_ID = re.compile(r'name="instance_id" type="hidden" value="([^"]*)"')


# ---------------------------------------------------------------- the project


def write_project(project_dir: Path, n_items: int) -> Path:
    """items.jsonl and config.yaml for the rrgen-shaped task; returns the config's path."""
    with open(project_dir / "items.jsonl", "w") as out:
        for line in items_jsonl(n_items).splitlines():
            item = json.loads(line)
            row = {"id": item["id"], "review": item["context"]}
            row.update({f"response_{n}": output["content"] for n, output in zip(RESPONSES, item["outputs"])})
            out.write(json.dumps(row) + "\n")
    config = {
        "annotation_task_name": "Concord peer bench", "task_dir": ".", "output_annotation_dir": "annotation_output/",
        "data_files": ["items.jsonl"], "item_properties": {"id_key": "id", "text_key": "review"},
        "instance_display": {"fields": [{"key": "review", "type": "text", "label": "Review"}] + [
            {"key": f"response_{n}", "type": "text", "label": f"Response {n}"} for n in RESPONSES]},
        "user_config": {"allow_all_users": True, "users": []},
        "require_password": True,
        "secret_key": secrets.token_urlsafe(40),
        "num_annotators_per_item": RATERS_PER_ITEM,
        "assignment_strategy": "fixed_order",
        "max_annotations_per_user": -1,  # no per-rater cap: a rater is handed one item at a time, on demand
        "annotation_schemes": annotation_schemes(),
        "site_dir": "default",
    }
    path = project_dir / "config.yaml"
    path.write_text(json.dumps(config, indent=1))  # JSON is YAML: no YAML writer needed on this side
    return path


def annotation_schemes() -> list[dict]:
    schemes = []
    for n in RESPONSES:
        schemes += [{"annotation_type": "likert", "name": f"{criterion}_r{n}",
                     "description": f"Response {n}: {criterion.replace('_', ' ')}", "min_label": "1",
                     "max_label": "5", "size": 5, "label_requirement": {"required": True}} for criterion in LIKERT]
        schemes.append({"annotation_type": "radio", "name": f"decision_r{n}", "description": f"Response {n}: decision",
                        "labels": list(DECISIONS), "label_requirement": {"required": True}})
    return schemes


def answers(rng: random.Random) -> dict[str, str]:
    """The page's save payload for a complete item: 'schema:label' -> value; a Likert point's label is its value."""
    out = {}
    for n in RESPONSES:
        for criterion in LIKERT:
            point = str(rng.randint(1, 5))
            out[f"{criterion}_r{n}:{point}"] = point
        decision = rng.choice(DECISIONS)
        out[f"decision_r{n}:{decision}"] = decision
    return out


# ---------------------------------------------------------------- the server


def start_server(python: Path, project_dir: Path, config: Path, port: int):
    gunicorn = python.parent / "gunicorn"
    cmd = [str(gunicorn), "--bind", f"127.0.0.1:{port}", *GUNICORN_ARGS,
           f"potato.flask_server:create_app({config.name!r})"]
    env = {**os.environ, "POTATO_NONINTERACTIVE": "1"}
    return start_process(cmd, cwd=project_dir, env=env, log_path=project_dir / "server.log",
                         ready_url=f"http://127.0.0.1:{port}/health")  # /health: 503 until the state is loaded


# ---------------------------------------------------------------- the raters


def rater_name(i: int) -> str:
    return f"peer-rater-{i:03d}"


async def sign_up(client: httpx.AsyncClient, i: int) -> None:
    """The registration form: creates the account, logs the client in, assigns a first item."""
    resp = await client.post("/register", data={"email": rater_name(i), "pass": secrets.token_hex(8)})
    if resp.status_code != 302:
        raise RuntimeError(f"registering {rater_name(i)}: HTTP {resp.status_code} {resp.text[:200]}")


async def sign_up_all(clients: list[httpx.AsyncClient]) -> None:
    gate = asyncio.Semaphore(8)  # the server's thread count; each sign-up hashes a password

    async def one(i: int, client: httpx.AsyncClient) -> None:
        async with gate:
            await sign_up(client, i)

    await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))


async def warm_up(client: httpx.AsyncClient) -> None:
    """Page renders (template compilation, first-request setup) before anything is measured. Reads
    only: a rater who holds an unanswered item is assigned nothing by GET /annotate."""
    deadline = time.monotonic() + WARM_UP_S
    while time.monotonic() < deadline:
        await asyncio.gather(*(client.get("/annotate") for _ in range(16)))


async def rater(i: int, client: httpx.AsyncClient, tally: RaterTally, stop_at: float) -> None:
    """One rater at full speed, as annotation.js drives the page: load it, save every answer, press Next."""
    rng = random.Random(i)
    while time.perf_counter() < stop_at:
        # 302: the rater's phase moved on (no items left for them); a 200 without an item is the no-work page.
        page = await send(tally, "page", client.get("/annotate"), (200, 302))
        if page is None:
            await asyncio.sleep(0.5)
            continue
        shown = INSTANCE_ID.search(page.text) if page.status_code == 200 else None
        if shown is None:
            tally.done_raters += 1
            return
        instance_id, sent = shown.group(1), answers(rng)
        body = {"instance_id": instance_id, "annotations": sent, "cleared_schemas": [], "span_annotations": []}
        saved = await send(tally, "save", client.post("/updateinstance", json=body), (200,))
        if saved is None:
            continue
        status = saved.json().get("status")
        if status != "success":  # a refusal (not assigned, blocked) can come with a 200
            tally.failed[f"save: {status}"] += 1
            continue
        tally.acknowledged[(rater_name(i), instance_id)] = sent
        await send(tally, "next", client.post("/annotate", json={"action": "next_instance", "instance_id": instance_id},
                                              headers=NAVIGATION_HEADERS), (200, 302))


async def drive(base: str, raters: int, seconds: float, server_pid: int, lean: bool = True) -> dict:
    """Sign the raters up, warm up, then run them for `seconds` (with bench.leanhttp where `lean`); the tally,
    the window and the CPU it cost."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=REQUEST_TIMEOUT_S))
                   for _ in range(raters)]
        await sign_up_all(clients)
        await warm_up(clients[0])
        measured = [await stack.enter_async_context(measured_client(c, lean=lean, timeout=REQUEST_TIMEOUT_S))
                    for c in clients]
        tally = RaterTally()
        server_cpu, client_cpu, started = process_tree_cpu_s(server_pid), time.process_time(), time.perf_counter()
        await asyncio.gather(*(rater(i, c, tally, started + seconds) for i, c in enumerate(measured)))
        window = time.perf_counter() - started
        return {"tally": tally, "window_s": window, "server_cpu_s": process_tree_cpu_s(server_pid) - server_cpu,
                "client_cpu_s": time.process_time() - client_cpu}


# ---------------------------------------------------------------- the audit


def stored_annotations(output_dir: Path) -> tuple[dict[tuple[str, str], list], dict[str, list[str]]]:
    """From every rater's user_state.json: (rater, item) -> [(schema, label, value)], and rater -> items assigned."""
    stored, assigned = {}, {}
    for state_file in sorted(output_dir.glob("*/user_state.json")):
        state = json.loads(state_file.read_text())
        user = state["user_id"]
        assigned[user] = state.get("instance_id_ordering", [])
        for item, labels in state.get("instance_id_to_label_to_value", {}).items():
            stored[(user, item)] = [(label["schema"], label["name"], value) for label, value in labels]
    return stored, assigned


def audit(output_dir: Path, acknowledged: dict[tuple[str, str], dict[str, str]]) -> dict:
    stored, assigned = stored_annotations(output_dir)
    # lost: acknowledged but stored otherwise than sent (missing, partial or different)
    lost = sum(1 for key, sent in acknowledged.items()
               if sorted(stored.get(key, [])) != sorted((*k.split(":", 1), v) for k, v in sent.items()))
    # duplicated: a single-choice question holding more than one answer for the same rater and item
    duplicated = sum(n - 1 for labels in stored.values() for n in Counter(s for s, _, _ in labels).values() if n > 1)
    holders, annotators = defaultdict(set), defaultdict(set)
    for user, items in assigned.items():
        for item in items:
            holders[item].add(user)
    for user, item in stored:
        annotators[item].add(user)
    return {
        "acknowledged": len(acknowledged), "stored": len(stored), "lost_or_incomplete": lost,
        "stored_not_acknowledged": len(set(stored) - set(acknowledged)), "duplicated_answers": duplicated,
        "over_assigned_items": sum(1 for users in holders.values() if len(users) > RATERS_PER_ITEM),
        "over_annotated_items": sum(1 for users in annotators.values() if len(users) > RATERS_PER_ITEM),
        "rater_item_twice": sum(len(items) - len(set(items)) for items in assigned.values()),
    }


# ---------------------------------------------------------------- the run


def run(items: int, seconds: float, raters: int, lean: bool = True) -> dict:
    python = peer_python("potato", REQUIREMENTS)
    version = installed_version(python, "potato-annotation")
    print(f"potato-annotation {version} in {python.parent.parent}", flush=True)
    with tempfile.TemporaryDirectory(prefix="peer-potato-") as tmp:
        project_dir = Path(tmp)
        config = write_project(project_dir, items)
        port = free_port()
        server = start_server(python, project_dir, config, port)
        try:
            measured = asyncio.run(drive(f"http://127.0.0.1:{port}", raters, seconds, server.pid, lean))
        finally:
            stop_process(server)
        tally = measured["tally"]
        if tally.failed:  # the log goes with the temporary project
            print(f"potato server log, last lines:\n{log_tail(project_dir / 'server.log')}", file=sys.stderr)
        checked = audit(project_dir / "annotation_output", tally.acknowledged)
    rated = len(tally.acknowledged)
    return {
        "name": "potato", "version": version, "client": "bench.leanhttp" if lean else "httpx", "items": items,
        "raters": raters, "seconds": seconds,
        "rated_items_per_s": rated / measured["window_s"],
        "cpu_ms_per_item": 1000 * measured["server_cpu_s"] / max(rated, 1),
        "lost": checked["lost_or_incomplete"], "duplicated": checked["duplicated_answers"],
        "over_assigned": checked["over_assigned_items"], "failed_requests": tally.failed_requests(),
        "window_s": round(measured["window_s"], 2), "rated_items": rated, "requests": tally.requests,
        "done_raters": tally.done_raters, "failures": dict(tally.failed),
        "load_generator_cpu_ms_per_item": 1000 * measured["client_cpu_s"] / max(rated, 1), "audit": checked,
        "notes": [
            f"server: gunicorn {' '.join(GUNICORN_ARGS)} on potato.flask_server:create_app, as Potato's Docker "
            "image runs it (more than one worker is refused there: per-process state)",
            "3 requests per rated item (GET /annotate, POST /updateinstance with all 15 answers, POST /annotate "
            "next_instance); a browser with think time also autosaves after each click",
            f"assignment: num_annotators_per_item {RATERS_PER_ITEM}, assignment_strategy fixed_order, "
            "max_annotations_per_user -1 (one item handed out at a time)",
            "storage: <output_annotation_dir>/<rater>/user_state.json rewritten whole and fsynced per save; "
            "the audit reads them after the server stopped",
            "raters logged in through POST /register (sign-up logs in; password hashed once per rater)",
        ],
    }

