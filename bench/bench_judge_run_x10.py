"""Judge runs of 1,000,000 slots (issue 26): 100k, 300k and 1M slots with --full; 10k, 30k, 100k by default.

Targets at 1,000,000 slots: enqueue < 60 s, the progress page < 200 ms while the run goes on, resume
after a kill without rescanning the done slots. Each size gets its own throwaway database with a
study of rrgen-001 (5 criteria) and 3 outputs an item generated inside PostgreSQL
(bench/rated_study.fill_items), and the same steps:

1. start: `judge_run_start` on the whole study, timed until every chunk message is in Redis;
2. half done: the scores of the first half of the items are written by SQL (a model at this size
   would take hours) and the run's totals recounted, as they would be after half the run;
3. a kill: the queued messages are dropped (the workers that held them are gone) and the run
   cancelled; `judge_run_resume` is timed, and the items it enqueues are checked to be exactly the
   unscored ones;
4. the run goes on: a real `celery worker` judges the resumed chunks against the loopback fake
   OpenAI server while the progress page is fetched every 0.25 s (Django's test client: routing,
   view, template); p50 and p95 of the page, and the slots scored a second meanwhile.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.dbtools import bench_database
from bench.growth import growth_rows

REPO = Path(__file__).resolve().parent.parent
CRITERIA, OUTPUTS = 5, 3                      # rrgen-001's criteria, outputs an item: 15 slots an item
FULL_SLOTS = (100_000, 300_000, 1_000_000)
DEFAULT_SLOTS = (10_000, 30_000, 100_000)
TARGETS = {"enqueue_s": 60.0, "progress_ms": 200.0}
QUEUE = "bench-judge-run-x10"
PAGE_FETCHES = 40


def _fill_half(run) -> int:
    """Score every slot of the first half of the run's items, as finished chunks would have."""
    from django.db import connection

    from annotation.models import Item, Output
    from judges.models import JudgeScore

    s_t, i_t, o_t = (m._meta.db_table for m in (JudgeScore, Item, Output))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {s_t} (run_id, item_id, output_id, criterion, value, score, status, raw_text, reasoning,"
            " tokens_in, tokens_out, cost_usd, doubt, detail, created_at)"
            " SELECT %s, o.item_id, o.id, c.key, to_jsonb(1 + o.id %% 5), 1 + o.id %% 5, 'scored', 'Score: 3', '',"
            " 420, 6, 0.000432, '{}', '{}', now()"
            f" FROM {o_t} o JOIN (SELECT id FROM {i_t} WHERE study_id = %s ORDER BY id"
            f"  LIMIT (SELECT count(*) / 2 FROM {i_t} WHERE study_id = %s)) i ON i.id = o.item_id"
            " CROSS JOIN unnest(%s::text[]) AS c(key)",
            [run.pk, run.study_id, run.study_id, run.criteria])
        written = cursor.rowcount
        cursor.execute(f"VACUUM (ANALYZE) {s_t}")
    return written


def _drop_queue(broker) -> None:
    """The bench queue, and what killed workers left unacknowledged from it (kombu's `unacked` hash,
    [message, exchange, routing key] by delivery tag): run ids restart in each bench database."""
    broker.delete(QUEUE)
    for tag, value in broker.hscan_iter("unacked"):
        if json.loads(value)[2] == QUEUE:
            broker.hdel("unacked", tag)
            broker.zrem("unacked_index", tag)


def _worker(db_name: str, log: Path) -> subprocess.Popen:
    """A real worker on the bench database, in its own session so the kill reaches only it."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db_name}"
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": settings.REDIS_URL, "CONCORD_TESTING": "1",
           "MEDIA_ROOT": str(settings.MEDIA_ROOT)}
    celery = Path(sys.executable).with_name("celery")
    cmd = [str(celery), "-A", "config", "worker", "-Q", QUEUE, "-P", "threads", "-c", "4", "--without-gossip",
           "--without-mingle", "--without-heartbeat", "-l", "warning", "-n", f"bench-x10-{time.monotonic_ns()}@%h"]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def measure_size(n_slots: int, log: Path) -> dict:
    with bench_database("judge_run_x10") as db_name:
        import redis
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.urls import reverse

        from annotation.models import Item
        from annotation.services.studies import study_create
        from bench.rated_study import fill_items
        from judges.fakeserver import running_fake_server
        from judges.models import JudgeScore
        from judges.services.configs import judge_config_save
        from judges.services.runs import judge_run_cancel, judge_run_refresh_totals, judge_run_resume, judge_run_start
        from judges.tasks import broker_held_chunks
        from rubrics.services import rubric_presets_install

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        broker = redis.Redis.from_url(settings.REDIS_URL)
        _drop_queue(broker)
        versions = {v.rubric.slug: v for v in rubric_presets_install()}
        User = get_user_model()
        admin = User.objects.create_superuser("bench-admin", "admin@example.org", "x")
        study = study_create(name="bench judge run", rubric_version=versions["rrgen-001"], user=admin,
                             raters_per_item=3)
        n_items = -(-n_slots // (CRITERIA * OUTPUTS))
        fill_items(study, [], n_items, n_outputs=OUTPUTS)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")
        out = {"slots": n_items * CRITERIA * OUTPUTS, "items": n_items, "loadavg_before": os.getloadavg()}
        with running_fake_server(latency_s=0.02) as server:
            judge, _ = judge_config_save(data={
                "name": "bench-x10-judge", "backend": "openai", "model": "fake-judge", "endpoint": server.base_url,
                "method": "per_criterion", "sampling": {"temperature": 0, "max_tokens": 64}, "concurrency": 8,
                "price_in_per_m": 1.0, "price_out_per_m": 2.0, "queue": QUEUE,
                "backend_options": {"max_retries": 2, "timeout_s": 30}, "method_options": {"use_cache": False}})

            t0 = time.perf_counter()
            run = judge_run_start(study=study, judge=judge, user=admin)
            out["enqueue_s"] = time.perf_counter() - t0
            out["chunks"] = broker.llen(QUEUE)
            assert run.n_expected == out["slots"], (run.n_expected, out["slots"])

            out["prefilled"] = _fill_half(run)
            judge_run_refresh_totals(run=run)
            _drop_queue(broker)  # the kill: the workers that held these are gone
            judge_run_cancel(run=run)
            done_items = set(JudgeScore.objects.filter(run=run).values_list("item_id", flat=True).distinct())
            t0 = time.perf_counter()
            run = judge_run_resume(run=run)
            out["resume_s"] = time.perf_counter() - t0
            queued = broker_held_chunks([QUEUE]).get(run.pk, set())
            unscored = set(Item.objects.filter(study=study).values_list("id", flat=True)) - done_items
            out["resume_items"] = len(queued)
            out["resume_exact"] = queued == unscored  # every unscored item, and not one done item

            client = Client()
            client.force_login(admin)
            url = reverse("judges:run-progress", args=[run.pk])
            assert client.get(url).status_code == 200
            worker = _worker(db_name, log)
            try:
                deadline = time.monotonic() + 120
                while JudgeScore.objects.filter(run=run).count() <= out["prefilled"] and time.monotonic() < deadline:
                    time.sleep(0.2)
                before = JudgeScore.objects.filter(run=run).count()
                started = time.perf_counter()
                times = []
                for _ in range(PAGE_FETCHES):
                    t0 = time.perf_counter()
                    response = client.get(url)
                    times.append((time.perf_counter() - t0) * 1000)
                    assert response.status_code == 200
                    time.sleep(0.25)
                elapsed = time.perf_counter() - started
                after = JudgeScore.objects.filter(run=run).count()
            finally:
                _kill(worker)
                _drop_queue(broker)
        out["progress_ms_p50"] = statistics.median(times)
        out["progress_ms_p95"] = statistics.quantiles(times, n=20)[-1]
        out["scored_per_s_meanwhile"] = (after - before) / elapsed
        out["loadavg_after"] = os.getloadavg()
        print(f"  {out['slots']:>9,} slots: enqueue {out['enqueue_s']:.1f} s ({out['chunks']:,} chunks), "
              f"resume {out['resume_s']:.1f} s ({out['resume_items']:,} items, exact {out['resume_exact']}), "
              f"progress p50 {out['progress_ms_p50']:.0f} ms p95 {out['progress_ms_p95']:.0f} ms while "
              f"{out['scored_per_s_meanwhile']:.0f} slots/s were scored", flush=True)
    return out


def run(full: bool = False) -> dict:
    log = Path(tempfile.gettempdir()) / "concord_judge_run_x10_worker.log"  # read it when a size fails
    log.unlink(missing_ok=True)
    sizes = [int(s) for s in os.environ["BENCH_SIZES"].split(",")] if os.environ.get("BENCH_SIZES") else (
        FULL_SLOTS if full else DEFAULT_SLOTS)
    measured = [measure_size(n, log) for n in sizes]
    rows = []
    for m in measured:
        last = m is measured[-1]
        at_size = last and m["slots"] >= 1_000_000  # below it a start is mostly fixed costs: no scaled target
        load = f"load {m['loadavg_before'][0]:.1f}"
        rows += [
            {"metric": f"judge run, enqueue: {m['slots']:,} slots, {m['chunks']:,} chunks ({load})",
             "value": round(m["enqueue_s"], 2), "unit": "s",
             "target": f"< {TARGETS['enqueue_s']:.0f}" if at_size else None,
             "ok": m["enqueue_s"] < TARGETS["enqueue_s"] if at_size else None},
            {"metric": f"judge run, progress page p95 while it runs: {m['slots']:,} slots, half done",
             "value": round(m["progress_ms_p95"], 1), "unit": "ms",
             "target": f"< {TARGETS['progress_ms']:.0f}" if last else None,
             "ok": m["progress_ms_p95"] < TARGETS["progress_ms"] if last else None},
            {"metric": f"judge run, resume after a kill: {m['slots']:,} slots, half done; enqueues only the "
                       f"{m['resume_items']:,} unscored items", "value": round(m["resume_s"], 2), "unit": "s",
             "target": "exactly the unscored items", "ok": m["resume_exact"]},
        ]
    series = {"enqueue s": [(m["slots"], m["enqueue_s"]) for m in measured],
              "resume s": [(m["slots"], m["resume_s"]) for m in measured],
              "progress p95 ms": [(m["slots"], m["progress_ms_p95"]) for m in measured]}
    rows += growth_rows("judge_run_x10", "slots", series)
    return {"name": "judge_run_x10", "sizes": measured, "rows": rows}
