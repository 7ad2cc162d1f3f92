"""What a rate/next/ call costs as one rater's own assignments grow (issue 26: the loop flat in the
size of the study). In a study with attention checks each call asks whether a check is due
(assignments._attention_is_due: the rater's non-expired assignments counted from the index that
carries the check flag, less those of the study's training items) and whether regular work is left
(assignments._regular_work_left). A study of 2,000,000 items rated by 3 of 100 raters gives each rater
60,000 assignments by its end. Last, a study with training: training_state (every rate/next/ of such a
study counts its training items) with and without the training items' own index.

    python -m bench.loop_rater_growth > bench/results/loop_rater_growth.txt

The rater's assignments are written by SQL (submitted, one per item, in upload order) on a study of
200,000 items (bench_loop_x10's); each function is timed 7 times after one warm-up call, median shown.
"""

from __future__ import annotations

import os
import statistics
import time

SIZES = (1_000, 10_000, 60_000)


def main() -> None:
    from bench.bench_loop_x10 import _fill
    from bench.dbtools import bench_database
    from bench.loadclient import setup_study

    with bench_database("ratergrowth"):
        from django.contrib.auth import get_user_model
        from django.db import connection

        from annotation.models import Study
        from annotation.services import assignments as engine

        slug, _ = setup_study(200_000, "k" * 50, raters=1, raters_per_item=3, user_prefix="grow", fill=_fill)
        Study.objects.filter(slug=slug).update(attention_check_rate=0.05)
        study = Study.objects.get(slug=slug)
        rater = get_user_model().objects.get(username__startswith="grow-")
        print(f"-- load average {os.getloadavg()[0]:.2f}", flush=True)
        done = 0
        for n in SIZES:
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO annotation_assignment (study_id, item_id, rater_id, status, permutation, slot,"
                    " is_attention_check, draft, ignored, ignore_reason, comment, time_on_task_ms, created_at,"
                    " submitted_at) SELECT %s, id, %s, 'submitted', '[0, 1, 2]', 0, false, '{}', false, '', '', 1000,"
                    " now(), now() FROM annotation_item WHERE study_id = %s ORDER BY id OFFSET %s LIMIT %s",
                    [study.pk, rater.pk, study.pk, done, n - done])
                cursor.execute("VACUUM ANALYZE annotation_assignment")
            done = n
            for name, call in (("_attention_is_due", lambda: engine._attention_is_due(study, rater)),
                               ("_regular_work_left", lambda: engine._regular_work_left(study, rater))):
                print(f"{n:>7,} assignments of the rater: {name} {_median_ms(call):.2f} ms", flush=True)
        _training_state(study, rater)
        print(f"-- load average {os.getloadavg()[0]:.2f}")


def _median_ms(call) -> float:
    """The median of 7 timed calls after one warm-up call, in ms."""
    call()
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _training_state(study, rater) -> None:
    """training_state on the 200,000-item study with three training items, with the partial index
    item_training_idx and without it (dropped here, in the bench's throwaway database)."""
    from django.db import connection

    from annotation.models import Item, Study
    from annotation.services.training import training_state

    Study.objects.filter(pk=study.pk).update(training_pass_mark=0.5)
    study.refresh_from_db()
    first = list(Item.objects.filter(study=study).order_by("id").values_list("pk", flat=True)[:3])
    Item.objects.filter(pk__in=first).update(is_training=True, is_attention_check=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE annotation_item")
    for label in ("with item_training_idx", "without it"):
        ms = _median_ms(lambda: training_state(study, rater))
        print(f"200,000 items, 3 of them training: training_state {ms:.2f} ms ({label})", flush=True)
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS item_training_idx")


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    main()
