"""Item import: 100k items x 3 outputs through the real validator and COPY path (FULL); 20k by default."""

from __future__ import annotations

import json
import resource
import time

from bench.dbtools import bench_database

TARGET_S = 30.0


def _items_jsonl(n: int) -> str:
    lines = []
    for i in range(n):
        lines.append(json.dumps({
            "id": f"item-{i:06d}",
            "context": f"Review {i}: the room was clean but the staff at the front desk were slow to help us.",
            "outputs": [{"system": f"model-{s}", "content": f"Response {s} to review {i}. Thank you for staying with us."}
                        for s in "abc"],
            "metadata": {"domain": "hotel" if i % 2 else "restaurant"},
        }))
    return "\n".join(lines) + "\n"


def run(full: bool = False) -> dict:
    n = 100_000 if full else 20_000
    text = _items_jsonl(n)
    with bench_database("import"):
        from annotation.models import Output
        from annotation.services.items import items_import
        from annotation.services.studies import study_create
        from rubrics.services import rubric_presets_install

        versions = {v.rubric.slug: v for v in rubric_presets_install()}
        study = study_create(name="bench import", rubric_version=versions["rrgen-001"])
        started = time.perf_counter()
        count = items_import(study=study, text=text, filename="items.jsonl")
        seconds = time.perf_counter() - started
        outputs = Output.objects.filter(item__study=study).count()
    assert count == n and outputs == 3 * n, (count, outputs)
    # Scale the target for the default size, so the row says whether the full size would pass.
    target = TARGET_S * n / 100_000
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"name": "import", "items": n, "rows": [
        {"metric": f"import {n:,} items x 3 outputs", "value": seconds, "unit": "s",
         "target": f"< {target:.0f} s", "ok": seconds < target},
        {"metric": "import rate", "value": n / seconds, "unit": "items/s", "target": "> 3,333", "ok": n / seconds > 3333},
        {"metric": "bench process peak RSS", "value": peak_mb, "unit": "MB", "target": None, "ok": None},
    ]}
