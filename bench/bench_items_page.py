"""The items page and its search at 200k, 600k and 2M items x 3 outputs with --full (20k, 60k, 200k by
default), through Django's test client (URL routing, the view, the template), on a study generated
inside PostgreSQL (bench/rated_study.fill_items: every 10th item rated by 3 raters, some open, some
flagged). Target at 2,000,000 items: < 200 ms a page, for every filter and for a search that finds
many items, one item, or none (a search reads at most items_list.SEARCH_WINDOW items a page).
Each case is timed three times after one warm-up request; the row is the median.
"""

from __future__ import annotations

import os
import statistics
import time

from bench.dbtools import bench_database
from bench.growth import growth_rows

FULL_ITEMS = (200_000, 600_000, 2_000_000)
DEFAULT_ITEMS = (20_000, 60_000, 200_000)
TARGET_MS = 200.0


def _cases(n: int, middle: int, rare: str) -> dict[str, dict]:
    return {"first page": {}, "middle page": {"after": middle}, "search, a common word": {"q": "friendly"},
            "search, one item": {"q": rare}, "search, no match": {"q": "zzqqxx"},
            "search, an id prefix": {"q": f"item-{n - 5:07d}"}, "unrated": {"status": "unrated"},
            "complete": {"status": "complete"}, "open on a screen": {"status": "open_now"},
            "flagged": {"flagged": "yes"}, "one system": {"system": "model-b"}}


def measure_size(n: int) -> dict:
    with bench_database("items_page"):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.db import connection
        from django.test import Client
        from django.urls import reverse

        from annotation.models import Item
        from annotation.services.studies import study_create
        from bench.rated_study import fill_items
        from rubrics.services import rubric_presets_install

        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
        versions = {v.rubric.slug: v for v in rubric_presets_install()}
        User = get_user_model()
        admin = User.objects.create_superuser("bench-admin", "admin@example.org", "x")
        study = study_create(name="bench items", rubric_version=versions["rrgen-001"], user=admin, raters_per_item=3)
        raters = User.objects.bulk_create([User(username=f"bench-rater-{r}", password="!") for r in range(3)])
        fill_items(study, raters, n)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")
            cursor.execute("SELECT md5(%s::text)", [n - 7])
            rare = cursor.fetchone()[0][:10]
        middle = Item.objects.filter(study=study).order_by("id").values_list("id", flat=True)[n // 2]
        client = Client()
        client.force_login(admin)
        url = reverse("items-page", args=[study.slug])
        out = {"n": n, "ms": {}, "loadavg_before": os.getloadavg()}
        for name, params in _cases(n, middle, rare).items():
            assert client.get(url, params).status_code == 200
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                client.get(url, params)
                times.append((time.perf_counter() - t0) * 1000)
            out["ms"][name] = statistics.median(times)
        out["loadavg_after"] = os.getloadavg()
        print(f"  {n:>9,} items: " + ", ".join(f"{k} {v:.0f} ms" for k, v in out["ms"].items()), flush=True)
    return out


def run(full: bool = False) -> dict:
    measured = [measure_size(n) for n in (FULL_ITEMS if full else DEFAULT_ITEMS)]
    rows = []
    for m in measured:
        last = m is measured[-1]
        for name, ms in m["ms"].items():
            rows.append({"metric": f"items page, {name}: {m['n']:,} items (load {m['loadavg_before'][0]:.1f})",
                         "value": round(ms, 1), "unit": "ms", "target": f"< {TARGET_MS:.0f}" if last else None,
                         "ok": ms < TARGET_MS if last else None})
    series = {"first page ms": [(m["n"], m["ms"]["first page"]) for m in measured],
              "search, no match ms": [(m["n"], m["ms"]["search, no match"]) for m in measured],
              "flagged ms": [(m["n"], m["ms"]["flagged"]) for m in measured]}
    rows += growth_rows("items_page", "items", series)
    return {"name": "items_page", "sizes": measured, "rows": rows}
