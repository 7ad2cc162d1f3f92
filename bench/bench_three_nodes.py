"""One study served by three web nodes behind HAProxy, one node SIGKILLed mid-run and started again
(bench/nodes.py: PgBouncer, Redis and a Celery worker node beside them).

Raters at a human pace (5-15 s an item) rate the study through HAProxy until it is done: POST rate/next/,
think, POST submit. A request cut off by the dying node (a 502 from HAProxy, which retries only GETs) or
refused is sent again unchanged, as the workspace lets the rater submit again with the same answers; a
submit is idempotent per assignment (annotation.services.ratings.assignment_submit). Beside them a
reader GETs the guidelines page over and over: HAProxy repeats a GET cut off by the kill on another node.

The node is killed when a third of the study's submits are acknowledged and started again at half.
Reported: p95 of next item and submit before the kill, during (kill to HAProxy marking the node up again)
and after; requests that failed and were sent again; raters signed out (a 302 to the sign-in page, 401
or 403); the audit (every acknowledged submit stored once and whole, nothing else stored, no item over-
assigned, the study done); a release built by the worker node and downloaded from every web node.

    python -m bench three_nodes          # 200 raters, about 2 minutes
    python -m bench three_nodes --full   # 1,000 raters
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import random
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from bench.bench_annotator_loop import _cpu_s, _database_backends, _pct, _server_cpu_s
from bench.faults_web import _progress, _when_progress
from bench.loadclient import (REQUEST_TIMEOUT_S, LoadStats, answers, audit, rater_client, send_until_answered,
                              server_log_tail, setup_study, warm_up)
from bench.nodes import Cluster, running_cluster, signed_in_session

RATERS_PER_ITEM = 3
THINK_SECONDS = (5.0, 15.0)  # DESIGN.md: a human rates an item in 5-15 s
KILL_AT, BACK_AT = 1 / 3, 1 / 2  # shares of the study's submits
SIGNED_OUT = (302, 401, 403)  # what a rater whose session was lost would get
READER_PAUSE_S = 0.05


@dataclass
class FailoverRun:
    """What the raters and the reader saw, and when the node went and came back (monotonic seconds)."""

    stats: LoadStats = field(default_factory=LoadStats)
    answered: list[tuple[str, float, float]] = field(default_factory=list)  # (kind, first try, final answer)
    signed_out: list[str] = field(default_factory=list)
    reads_ok: int = 0
    reads_failed: list[str] = field(default_factory=list)
    started: float = 0.0
    killed_at: float | None = None
    down_at: float | None = None  # HAProxy marked the node down
    restarted_at: float | None = None
    back_at: float | None = None  # HAProxy marked it up again
    ended: float = 0.0
    cpu_before: dict[str, float] = field(default_factory=dict)  # CPU seconds of each tier from start to the kill
    acknowledged_before: int = 0

    def window(self, when: float) -> str:
        if self.killed_at is None or when < self.killed_at:
            return "before"
        return "during" if self.back_at is None or when < self.back_at else "after"

    async def send(self, client, url: str, body: dict | None, *, kind: str, deadline: float, rng: random.Random):
        sent = time.monotonic()
        resp = await send_until_answered(client, url, body, kind=kind, stats=self.stats, deadline=deadline, rng=rng)
        if resp is not None and resp.status_code == 200:
            self.answered.append((kind, sent, time.monotonic()))
        return resp

    def accepted(self, kind: str, resp) -> bool:
        """True for a 200; otherwise the rater stops, and why is recorded."""
        if resp is not None and resp.status_code == 200:
            return True
        if resp is None:
            self.stats.gave_up_raters += 1
        elif resp.status_code in SIGNED_OUT:
            self.signed_out.append(f"{kind}: HTTP {resp.status_code}")
        else:
            self.stats.unexpected.append(f"{kind}: HTTP {resp.status_code} {resp.text[:200]}")
        return False


async def paced_rater(i: int, base: str, slug: str, session_key: str, run: FailoverRun,
                      think: tuple[float, float], deadline: float, lean: bool) -> None:
    """Rates until the study has nothing more for this rater, thinking `think` seconds an item."""
    rng = random.Random(i)
    async with rater_client(base, session_key, timeout=REQUEST_TIMEOUT_S, lean=lean) as client:
        await asyncio.sleep(rng.uniform(0, think[1]))  # raters arrive over the first think interval
        while True:
            resp = await run.send(client, f"/api/studies/{slug}/rate/next/", None, kind="next", deadline=deadline,
                                  rng=rng)
            if not run.accepted("next", resp):
                return
            data = resp.json()
            assignment = data["assignment"]
            if assignment is None:
                if data["state"] == "done":
                    run.stats.done_raters += 1
                else:
                    run.stats.unexpected.append(f"next: state {data['state']}")
                return
            await asyncio.sleep(rng.uniform(*think))
            body = {"answers": answers(rng, assignment["responses"]), "time_on_task_ms": rng.randint(5000, 15000)}
            resp = await run.send(client, f"/api/studies/{slug}/rate/{assignment['token']}/submit/", body,
                                  kind="submit", deadline=deadline, rng=rng)
            if not run.accepted("submit", resp):
                return
            run.stats.acknowledged.add(assignment["token"])


async def reader(base: str, slug: str, session_key: str, run: FailoverRun, load: asyncio.Future) -> None:
    """GETs the guidelines page until the raters are done. HAProxy retries a GET the dead node had not begun to
    answer; one whose headers it had already passed on it cannot, and the client sees the body cut short. A
    failure is recorded as "<window sent>-><window failed>: <error>"."""
    async with httpx.AsyncClient(base_url=base, cookies={"sessionid": session_key}, timeout=REQUEST_TIMEOUT_S) as c:
        while not load.done():
            sent = time.monotonic()
            try:
                resp = await c.get(f"/studies/{slug}/rate/guidelines/")
            except httpx.TransportError as exc:
                failed = run.window(time.monotonic())
                run.reads_failed.append(f"{run.window(sent)}->{failed}: {type(exc).__name__}: {str(exc)[:100]}")
            else:
                if resp.status_code == 200:
                    run.reads_ok += 1
                    run.answered.append(("read", sent, time.monotonic()))
                elif resp.status_code in SIGNED_OUT:
                    run.signed_out.append(f"read: HTTP {resp.status_code}")
                else:
                    # the body says who answered: HAProxy's "No server is available" or a node's own error
                    body = " ".join(resp.text.split())[:120]
                    run.reads_failed.append(f"{run.window(sent)}: HTTP {resp.status_code} {body}")
            await asyncio.sleep(READER_PAUSE_S)


async def run_with_failover(cluster: Cluster, slug: str, sessions: list[str], *, think: tuple[float, float],
                            expected_submits: int, victim: int = 1, kill_at: float = KILL_AT,
                            back_at: float = BACK_AT, time_limit_s: float = 900.0, lean: bool = True,
                            readers: int = 2) -> FailoverRun:
    """Every rater rates until the study is done while node `victim` is SIGKILLed at `kill_at` of the
    submits and started again at `back_at` (or once HAProxy has marked it down, if later)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)
    await warm_up(cluster.url, slug, sessions[0])
    cpu_start = await asyncio.to_thread(cpu_by_tier, cluster)  # Django's queries: not on the event loop
    run = FailoverRun(started=time.monotonic())
    deadline = run.started + time_limit_s
    node = cluster.nodes[victim]
    load = asyncio.ensure_future(asyncio.gather(
        *(paced_rater(i, cluster.url, slug, key, run, think, deadline, lean) for i, key in enumerate(sessions))))
    reading = [asyncio.ensure_future(reader(cluster.url, slug, sessions[i], run, load)) for i in range(readers)]
    try:
        if await _when_progress(run.stats, load, kill_at * expected_submits):
            cpu_kill = await asyncio.to_thread(cpu_by_tier, cluster)
            run.cpu_before = {tier: cpu_kill[tier] - cpu_start[tier] for tier in cpu_kill}
            run.acknowledged_before = len(run.stats.acknowledged)
            run.killed_at = time.monotonic()
            node.kill()
            run.down_at = await asyncio.to_thread(cluster.haproxy.wait_for, node.name, "DOWN", 30)
            await _when_progress(run.stats, load, back_at * expected_submits)
            run.restarted_at = time.monotonic()
            await asyncio.to_thread(node.start)
            run.back_at = await asyncio.to_thread(cluster.haproxy.wait_for, node.name, "UP", 60)
        await load
    finally:
        load.cancel()
        await asyncio.gather(*reading, return_exceptions=True)
    run.ended = time.monotonic()
    return run


def cut_by_the_kill(run: FailoverRun) -> list[str]:
    """The GETs the kill cut mid-answer: sent before it, failed after it with their body short."""
    return [f for f in run.reads_failed
            if f.startswith("before->during") and "without sending complete message body" in f]


def cpu_by_tier(cluster: Cluster) -> dict[str, float]:
    """CPU seconds so far of the web nodes (all processes), PostgreSQL's backends on the study's database,
    PgBouncer, HAProxy and this process (the load generator)."""
    return {"web nodes": sum(_server_cpu_s(n.proc) for n in cluster.nodes),
            "PostgreSQL": sum(_database_backends(cluster.db_name).values()),
            "PgBouncer": _cpu_s(cluster.pgbouncer.pid), "HAProxy": _cpu_s(cluster.haproxy.proc.pid),
            "load generator": time.process_time()}


def release_from_every_node(cluster: Cluster, slug: str, session_key: str, timeout_s: float = 120) -> dict:
    """Queue a release through HAProxy, wait for the worker node to build it into the shared MEDIA_ROOT,
    and download it from each web node directly: {node name: its SHA-256 matches the release's}."""
    cookies = {"sessionid": session_key, "csrftoken": (csrf := secrets.token_hex(16))}
    headers = {"X-CSRFToken": csrf, "Referer": cluster.url + "/"}
    with httpx.Client(base_url=cluster.url, cookies=cookies, headers=headers, timeout=60) as client:
        made = client.post(f"/api/studies/{slug}/releases/", json={"version": "1.0.0", "formats": ["csv"]})
        if made.status_code != 201:
            raise RuntimeError(f"release not queued: HTTP {made.status_code} {made.text[:300]}")
        release_id = made.json()[0]["id"]
        deadline = time.monotonic() + timeout_s
        while True:
            found = {r["id"]: r for r in client.get(f"/api/studies/{slug}/releases/").json()}[release_id]
            if found["status"] == "ready":
                break
            if found["status"] == "failed" or time.monotonic() > deadline:
                raise RuntimeError(f"release {found['status']}: {found.get('error')}\n{cluster.worker_log_tail()}")
            time.sleep(0.2)
    out = {}
    for node in cluster.nodes:  # each node's own address; Host as the proxy sends it
        resp = httpx.get(f"http://{node.host}:{node.port}/api/studies/{slug}/releases/{release_id}/file/",
                         cookies={"sessionid": session_key}, headers={"Host": "127.0.0.1"}, timeout=60)
        out[node.name] = (resp.status_code == 200 and hashlib.sha256(resp.content).hexdigest() == found["sha256"]
                          == resp.headers.get("X-Checksum-SHA256"))
    return out


def admin_session(secret_key: str) -> str:
    """A site admin (reads every study: queues and downloads releases), signed in."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create(username=f"nodes-admin-{secrets.token_hex(3)}", password="!unusable",
                                           is_staff=True)
    return signed_in_session(user, secret_key)


def window_rows(run: FailoverRun, label: str) -> list[dict]:
    """p50/p95 of next item and submit (first try to answer, retries included) and the tries that failed,
    before, during and after the failover."""
    rows = []
    for window in ("before", "during", "after"):
        for kind, name in (("next", "next item"), ("submit", "submit"), ("read", "guidelines page (GET)")):
            values = [1000 * (end - sent) for k, sent, end in run.answered if k == kind and run.window(sent) == window]
            for q in (50, 95):
                rows.append({"metric": f"{label}, {window} the failover: {name} p{q}", "value": _pct(values, q),
                             "unit": "ms", "target": None, "ok": None})
        # by when the try failed: a request in flight at the kill fails during the failover
        failed = sum(1 for _, _, _, ended in run.stats.failed if run.window(ended) == window)
        rows.append({"metric": f"{label}, {window} the failover: POSTs failed and sent again", "value": float(failed),
                     "unit": "", "target": None, "ok": None})
    seconds = (run.killed_at or run.ended) - run.started
    for tier, cpu_s in run.cpu_before.items():  # the capacity model's figures (docs/scaling.md)
        rows.append({"metric": f"{label}, before the failover: {tier} CPU per rated item",
                     "value": 1000 * cpu_s / max(run.acknowledged_before, 1), "unit": "ms", "target": None, "ok": None})
        rows.append({"metric": f"{label}, before the failover: {tier} CPU", "value": cpu_s / seconds, "unit": "cores",
                     "target": None, "ok": None})
    rows.append({"metric": f"{label}, before the failover: rated items/s",
                 "value": run.acknowledged_before / seconds, "unit": "items/s", "target": None, "ok": None})
    return rows


def verdict(slug: str, run: FailoverRun, cluster: Cluster, expected_submits: int) -> dict:
    """The audit and what HAProxy and the nodes saw."""
    found, progress = audit(slug, run.stats.acknowledged), _progress(slug)
    stats = cluster.haproxy.stats()
    return {
        **found, **progress, "expected_submits": expected_submits,
        "signed_out": len(run.signed_out), "unexpected": run.stats.unexpected[:5],
        "raters_done": run.stats.done_raters, "raters_gave_up": run.stats.gave_up_raters,
        "posts_failed": len(run.stats.failed), "post_failures": {f"{k} {r}": n for (k, r), n in run.stats.retries.items()},
        "reads_ok": run.reads_ok, "reads_failed": run.reads_failed[:10],
        "haproxy": {name: {k: row[k] for k in ("status", "stot", "wretr", "wredis", "hrsp_5xx", "eresp", "econ",
                                                "chkdown")} for name, row in stats.items()},
        "served_by_node": {n.name: n.served() for n in cluster.nodes},
        "kill_to_down_s": run.down_at - run.killed_at if run.down_at else None,
        "restart_to_up_s": run.back_at - run.restarted_at if run.back_at else None,
        "failover_window_s": run.back_at - run.killed_at if run.back_at else None,
        # what went wrong, as HAProxy and the nodes logged it (HAProxy logs only failed or retried requests)
        "haproxy_log": cluster.haproxy.log_tail(),
        "node_logs": {n.name: server_log_tail(n.proc, 1500) for n in cluster.nodes if n.proc is not None},
    }


def run(full: bool = False) -> dict:
    from bench.dbtools import bench_database

    raters, n_items = (1000, 3000) if full else (200, 500)
    raters = int(os.environ.get("BENCH_NODES_RATERS", raters))
    n_items = int(os.environ.get("BENCH_NODES_ITEMS", n_items))
    expected = n_items * RATERS_PER_ITEM
    label = f"{raters:,} raters, 3 nodes"
    media_root = Path(tempfile.mkdtemp(prefix="concord-nodes-media-"))  # the nodes' shared MEDIA_ROOT
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, media_root, ignore_errors=True)
        db_name = cleanup.enter_context(bench_database("three_nodes"))
        from django.conf import settings

        secret_key = secrets.token_urlsafe(40)
        slug, sessions = setup_study(n_items, secret_key, raters=raters, raters_per_item=RATERS_PER_ITEM,
                                     name="bench three nodes", user_prefix="bench-nodes")
        admin = admin_session(secret_key)
        direct = urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + db_name))
        load_before = os.getloadavg()[0]
        with running_cluster(direct, secret_key, media_root=media_root, redis_url=settings.REDIS_URL,
                             max_clients=200) as cluster:
            failover = asyncio.run(run_with_failover(cluster, slug, sessions, think=THINK_SECONDS,
                                                     expected_submits=expected))
            found = verdict(slug, failover, cluster, expected)
            found["release_downloads"] = release_from_every_node(cluster, slug, admin)
        load_after = os.getloadavg()[0]
    rows = window_rows(failover, label)
    checks = (("acknowledged submits lost or incomplete", found["lost_or_incomplete"]),
              ("duplicated ratings", found["duplicate_ratings"]),
              ("submits stored but not acknowledged", found["stored_not_acknowledged"]),
              ("over-assigned items", found["over_assigned_items"]),
              ("raters given an item twice", found["rater_item_twice"]),
              ("raters signed out", found["signed_out"]),
              ("raters that gave up or stopped on an error", found["raters_gave_up"] + len(found["unexpected"])),
              ("GETs failed during the failover (HAProxy retries them)",
               sum(1 for f in failover.reads_failed if f.startswith("during"))),
              ("items not rated raters_per_item times (the study did not end)",
               found["expected_items"] - found["completed_items"]))
    for name, value in checks:
        rows.append({"metric": f"{label}: {name}", "value": float(value), "unit": "", "target": "0", "ok": value == 0})
    rows += [
        # a GET the node was answering when killed: HAProxy had passed its headers on and cannot retry it
        {"metric": f"{label}: GETs cut off mid-answer by the kill",
         "value": float(len(cut := cut_by_the_kill(failover))), "unit": "", "target": None, "ok": None},
        # outside the failover a GET fails only on an overloaded machine (HAProxy's queue timeout: 503)
        {"metric": f"{label}: GETs failed before or after the failover",
         "value": float(sum(1 for f in failover.reads_failed if not f.startswith("during") and f not in cut)),
         "unit": "", "target": None, "ok": None},
        {"metric": f"{label}: acknowledged submits", "value": float(found["acknowledged"]), "unit": "items",
         "target": f"= {expected}", "ok": found["acknowledged"] == expected == found["stored"]},
        {"metric": f"{label}: kill to marked down", "value": found["kill_to_down_s"], "unit": "s", "target": None,
         "ok": None},
        {"metric": f"{label}: requests HAProxy sent to another node (refused by the dead one, or a GET cut off)",
         "value": float(sum(int(row["wredis"]) for name, row in found["haproxy"].items() if name != "BACKEND")),
         "unit": "", "target": None, "ok": None},
        {"metric": f"{label}: failover window (kill to up again)", "value": found["failover_window_s"], "unit": "s",
         "target": None, "ok": None},
        {"metric": f"{label}: release built by the worker node, downloaded whole from every web node",
         "value": float(sum(found["release_downloads"].values())), "unit": "nodes", "target": "3",
         "ok": all(found["release_downloads"].values())},
    ]
    return {
        "name": "three_nodes", "rows": rows, "verdict": found,
        "config": {"raters": raters, "items": n_items, "raters_per_item": RATERS_PER_ITEM, "think_s": THINK_SECONDS,
                   "kill_at_share": KILL_AT, "back_at_share": BACK_AT, "nodes": 3,
                   "node": "gunicorn 2 workers x 8 threads (gthread), DEBUG=0, its own loopback address",
                   "haproxy": "leastconn, maxconn 16 a node, httpchk GET /login/ every 0.5 s (timeout 5 s), fall 2 "
                              "rise 2, down at the first refused connection (observe layer4), L7 retries for GET only",
                   "worker": "celery, one process, both queues",
                   "load_average_before_after": [load_before, load_after],
                   "seconds_of_load": failover.ended - failover.started},
    }
