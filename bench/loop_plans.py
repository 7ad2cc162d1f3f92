"""EXPLAIN (ANALYZE, BUFFERS) of every statement the rating loop sends, on a generated study of N items:
a next item must be an index walk that stops early, never a scan or a sort of the study.

    python -m bench.loop_plans 2000000 > bench/results/loop_plans_2M.txt

The study is bench_loop_x10's (bench/rated_study.fill_items, 3 outputs an item); RATERS raters first
rate PROGRESS items each through the API (Django's test client, in this process), so the plans are
those of a study under way. Then one rater's rate/next/ and submit?next=1 are captured and each of
their statements is explained, in a transaction rolled back afterwards. The plans are the custom
plans of the statements as logged (the server prepares them after a few runs; the plan of a
prepared statement is checked by the bench's own timings, not here).
"""

from __future__ import annotations

import os
import random
import re
import sys
import time

RATERS, PROGRESS = 20, 5


def _explain(cursor, sql: str) -> tuple[float, str]:
    cursor.execute("SAVEPOINT explain")
    try:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    finally:
        cursor.execute("ROLLBACK TO SAVEPOINT explain")
    found = re.search(r"Execution Time: ([\d.]+) ms", plan)
    return (float(found.group(1)) if found else float("nan")), plan


def main(n_items: int) -> None:
    from bench.bench_loop_x10 import _fill
    from bench.dbtools import bench_database
    from bench.loadclient import answers, setup_study

    with bench_database("loopplans"):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        t0 = time.perf_counter()
        slug, _ = setup_study(n_items, settings.SECRET_KEY, raters=RATERS, raters_per_item=3,
                              name="loop plans", user_prefix="plans", fill=_fill)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        print(f"-- {n_items:,} items written in {time.perf_counter() - t0:.0f} s", flush=True)
        rng = random.Random(1)
        clients = []
        for user in get_user_model().objects.filter(username__startswith="plans-").order_by("id"):
            client = Client()
            client.force_login(user)
            clients.append(client)

        def one_item(client: Client) -> None:
            data = client.post(f"/api/studies/{slug}/rate/next/").json()["assignment"]
            url = f"/api/studies/{slug}/rate/{data['token']}/submit/?next=1"
            body = {"answers": answers(rng, data["responses"]), "time_on_task_ms": 9000}
            assert client.post(url, body, content_type="application/json").status_code == 200

        for _ in range(PROGRESS):
            for client in clients:
                one_item(client)
        with CaptureQueriesContext(connection) as captured:
            one_item(clients[0])
        statements = [q["sql"] for q in captured.captured_queries
                      if re.match(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", q["sql"], re.I)]
        print(f"-- {len(statements)} statements: rate/next/ then submit?next=1 (one item, after "
              f"{RATERS * PROGRESS} rated)\n", flush=True)
        results = []
        with connection.cursor() as cursor:
            cursor.execute("BEGIN")
            for i, sql in enumerate(statements, 1):
                ms, plan = _explain(cursor, sql)
                results.append((ms, i, sql, plan))
            cursor.execute("ROLLBACK")
        for ms, i, sql, plan in results:
            print(f"===== statement {i}: {ms:.3f} ms\n{sql}\n{plan}\n")
        slowest = sorted(results, reverse=True)[:5]
        print("-- slowest: " + ", ".join(f"#{i} {ms:.3f} ms" for ms, i, _, _ in slowest))
        print(f"-- total execution: {sum(r[0] for r in results):.3f} ms")


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
