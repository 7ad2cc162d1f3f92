"""Writing a judge run's scores and ending the run: one row per slot, at most once, counted as
it goes, and the run marked done by exactly one caller once every slot has its row.

Called by a chunk (runs.judge_chunk_process) and by a batch run's chunk (batches); it reserves
nothing itself, and gives back what the chunk reserved (budget) in the transaction that writes.
"""

from __future__ import annotations

import logging
import operator
from collections import Counter
from dataclasses import dataclass
from functools import reduce
from typing import Any, Mapping, Sequence

from django.db import connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation.models import Item, Output
from config.limits import clip
from judges.plan import STEP_SEPARATOR
from judges.models import JudgeRun, JudgeScore
from judges.services import engine
from judges.services.budget import cost_release

log = logging.getLogger(__name__)


@dataclass
class ChunkOutcome:
    written: int = 0
    retry: bool = False  # some slots failed on retryable errors and were left for the next attempt
    skipped: str | None = None  # why nothing was done (run cancelled, done, ...)


def write_judged(run: JudgeRun, judged: Sequence[engine.Judged], pending: Mapping, where: Mapping,
                  final_attempt: bool, outcome: ChunkOutcome, reserved: float = 0.0) -> ChunkOutcome:
    """One row per pending slot (retryable failures left for the next attempt), at most once each."""
    crit_defs = {c["key"]: c for c in run.study.rubric.get("criteria", [])}
    rows, seen = [], set()
    for j in judged:
        key = (j.item_id, j.output)
        if key not in pending or j.criterion not in pending[key]:
            continue  # the method answered more than was asked (e.g. already-scored criteria)
        seen.add((key, j.criterion))
        if j.retryable and not final_attempt:
            outcome.retry = True
            continue
        item, out = where[key]
        rows.append(_score_row(run, item, out, j, crit_defs.get(j.criterion.partition(STEP_SEPARATOR)[0])))
    for key, slots in pending.items():  # a slot the method gave no answer for still gets its one row
        for slot in slots:
            if (key, slot) not in seen:
                item, out = where[key]
                rows.append(JudgeScore(run=run, item=item, output=out, criterion=slot, status="error",
                                       detail={"error": "the method returned no result for this slot"}))
    with transaction.atomic():
        JudgeRun.objects.select_for_update().filter(pk=run.pk).values_list("pk").first()  # see judges.services.budget
        cost_release(run_id=run.pk, amount=reserved)
        add_to_totals(run_id=run.pk, inserted=insert_new_scores(rows))
    outcome.written = len(rows)
    judge_run_finish_if_complete(run_id=run.pk)
    return outcome


def _score_row(run: JudgeRun, item: Item, out: Output | None, j: engine.Judged,
               criterion: dict | None) -> JudgeScore:
    return JudgeScore(
        run=run, item=item, output=out, criterion=j.criterion, value=j.value, status=j.status,
        score=engine.numeric_score(criterion, j.value) if j.status == "scored" else None,
        raw_text=clip("judge.raw_text", j.raw_text), reasoning=clip("judge.reasoning", j.reasoning or ""), tokens_in=j.tokens_in, tokens_out=j.tokens_out,
        cost_usd=j.cost_usd, doubt=j.doubt, detail=j.detail,
    )


# ------------------------------------------------------------------------------------- finishing

def run_totals(run: JudgeRun) -> dict[str, Any]:
    """The run's totals counted from its scores: exact, and as slow as the run is large."""
    agg = JudgeScore.objects.filter(run=run).aggregate(
        done=Count("id"),
        scored=Count("id", filter=Q(status="scored")), unparsed=Count("id", filter=Q(status="unparsed")),
        refusal=Count("id", filter=Q(status="refusal")), error=Count("id", filter=Q(status="error")),
        truncated=Count("id", filter=Q(status="truncated")),
        tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"), cost=Sum("cost_usd"),
    )
    return {k: (v or 0) for k, v in agg.items()}


def judge_run_refresh_totals(*, run: JudgeRun) -> JudgeRun:
    """Recount the run's counters from its scores: after writes that do not count as they go
    (copied scores, deleted errors, a jury) and once when the run ends."""
    t = run_totals(run)
    for status in JudgeScore.Status.values:
        setattr(run, f"n_{status}", t[status])
    run.tokens_in, run.tokens_out, run.cost_usd = t["tokens_in"], t["tokens_out"], float(t["cost"])
    run.save(update_fields=[*COUNTERS, "tokens_in", "tokens_out", "cost_usd"])
    return run


COUNTERS = [f"n_{status}" for status in JudgeScore.Status.values]
RETURNED = ("status", "tokens_in", "tokens_out", "cost_usd")


def insert_new_scores(rows: Sequence[JudgeScore], batch_size: int = 1000) -> list[tuple]:
    """Insert the rows no other attempt wrote first (the unique slot constraint), returning
    (status, tokens_in, tokens_out, cost_usd) of those that went in, so the run's counters add
    exactly them: a chunk delivered twice counts once. (bulk_create cannot return what
    ON CONFLICT DO NOTHING skipped.)"""
    fields = [f for f in JudgeScore._meta.concrete_fields if not f.primary_key]
    table = connection.ops.quote_name(JudgeScore._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    inserted: list[tuple] = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), batch_size):
            batch = rows[start:start + batch_size]
            params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in batch for f in fields]
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {', '.join([one] * len(batch))}"
                           f" ON CONFLICT DO NOTHING RETURNING {', '.join(RETURNED)}", params)
            inserted += cursor.fetchall()
    return inserted


def add_to_totals(*, run_id: int, inserted: Sequence[tuple]) -> None:
    """Add the rows just inserted to the run's live counters, in the transaction that inserted them:
    the progress page and the end-of-run check read the row, not a million scores."""
    if not inserted:
        return
    statuses = Counter(row[0] for row in inserted)
    JudgeRun.objects.filter(pk=run_id).update(
        **{f"n_{s}": F(f"n_{s}") + n for s, n in statuses.items()},
        tokens_in=F("tokens_in") + sum(row[1] for row in inserted),
        tokens_out=F("tokens_out") + sum(row[2] for row in inserted),
        cost_usd=F("cost_usd") + sum(row[3] for row in inserted))


def outcome(run: JudgeRun) -> tuple[str, str]:
    """(status, error) of a run every slot of which has its row: `failed` when no call succeeded
    (every row an error: a run with nothing to report, however many slots it counts), `done with
    errors` when some did not, else `done`."""
    if run.n_error and run.n_error >= run.n_done:
        first = (JudgeScore.objects.filter(run=run, status="error").order_by("id")
                 .values_list("detail", flat=True).first() or {})
        texts = [v for v in first.values() if isinstance(v, str)]
        texts += [x for v in first.values() if isinstance(v, list) for x in v if isinstance(x, str) and x]
        why = "; ".join(dict.fromkeys(texts))
        return JudgeRun.Status.FAILED, (f"no call succeeded: all {run.n_error} slots ended in error"
                                        + (f"; the first: {why}" if why else ""))[:2000]
    if run.n_error:
        return JudgeRun.Status.DONE_WITH_ERRORS, run.error
    return JudgeRun.Status.DONE, run.error


def judge_run_finish_if_complete(*, run_id: int, recount: bool = False) -> bool:
    """End the run (done, done with errors or failed: `outcome`) once every slot has its score; exactly one caller wins and writes the files.

    The live counters say when to look; the run ends only on a recount of its scores (once a run,
    in the transaction that ends it), so counters that drifted (scores deleted under a running
    run) are corrected, never trusted. `recount`: look even when the counters say it is not time
    (a chunk that found all its slots scored). The status and the totals change in one transaction,
    so no reader sees a done run without them.
    """
    active = JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE)
    done = reduce(operator.add, (F(c) for c in COUNTERS))
    if not recount and not active.alias(done=done).filter(done__gte=F("n_expected")).exists():
        return False
    with transaction.atomic():
        run = active.select_for_update().select_related("study__rubric_version").first()
        if run is None:
            return False
        judge_run_refresh_totals(run=run)
        if run.n_done < run.n_expected:
            return False
        run.status, run.error = outcome(run)
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
    from judges.services.files import write_run_files
    from annotation.services.routing_flag import routing_refresh_request

    routing_refresh_request(run.study_id, delay_s=0.5)  # a routing study re-ranks its items on the new judgements
    if run.status in JudgeRun.FINISHED and (run.study.sampling_policy or {}).get("name") == "active_inference":
        # an active_inference study draws its pilot once judges have scored (imported here: SciPy's statistics)
        from annotation.services.active_inference import active_pilot_request

        active_pilot_request(study_id=run.study_id)
    try:
        write_run_files(run)
    except OSError:
        log.exception("could not write the files of judge run %s (they are rebuilt on download)", run_id)
    return True
