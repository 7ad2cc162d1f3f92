"""Judge runs: start (fan out chunks), process one chunk (from the task), finish, cancel, resume.

A run expects a fixed set of slots: (output, criterion) for per-output methods, (item,
"pair:..." / "rank:..." / "bw:...") for the comparative ones. Every slot ends with exactly one JudgeScore (scored, unparsed,
refusal or error); the run is done when the count of its scores reaches the count of its
slots. Scores are inserted with ON CONFLICT DO NOTHING, so a chunk that runs twice (a
redelivered task, a resume) cannot score anything twice.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections import Counter
from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable, Iterable, Mapping, Sequence

from django.db import connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation.models import Item, Output, Study
from judges.config import FIELDS, chunk_size as config_chunk_size
from judges.models import JudgeConfig, JudgeRun, JudgeScore
from judges.services import engine
from judges.services.batches import batch_chunk_process, batch_run
from judges.services.budget import (
    cost_release, cost_reserve, count_rate_limited, judge_run_pause, rate_limiter, slot_max_cost,
)
from judges.services.estimate import run_estimate
from judges.services.run_keys import run_key, run_key_parts
from judges.store import DBCache

log = logging.getLogger(__name__)

DEFAULT_TASK_RETRIES = 5
DEFAULT_TASK_BACKOFF_S = 2.0


class JudgeRunError(ValueError):
    pass


# ------------------------------------------------------------------------------------- snapshots

def judge_config_dict(judge: JudgeConfig) -> dict[str, Any]:
    return {f: getattr(judge, f) for f in FIELDS}


def _named_judges(names: Sequence[str], what: str) -> list[JudgeConfig]:
    found = {j.name: j for j in JudgeConfig.objects.filter(name__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        raise JudgeRunError(f"{what} not found: {', '.join(missing)}")
    return [found[n] for n in names]


def judge_config_snapshot(judge: JudgeConfig, study: Study | None = None) -> dict[str, Any]:
    """The judge's configuration frozen into the run; escalation also freezes its experts, a
    weighted ensemble its members and, for weights: gold, the weights learnt now."""
    snap = judge_config_dict(judge)
    mo = judge.method_options or {}
    if mo.get("ensemble") == "weighted":
        members = _named_judges(list(mo.get("members") or []), "ensemble members")
        snap["members"] = [judge_config_dict(j) for j in members]
        if mo.get("weights") == "gold":
            from judges.services.gold import GoldError, ensemble_weights_from_gold

            if study is None:
                raise JudgeRunError("weights: gold needs the study whose gold labels teach them")
            try:
                snap["ensemble_weights"] = ensemble_weights_from_gold(study, [j.name for j in members])
            except GoldError as exc:
                raise JudgeRunError(str(exc)) from exc
    if judge.method == "escalation":
        names = list((judge.method_options or {}).get("experts") or [])
        experts = {j.name: j for j in JudgeConfig.objects.filter(name__in=names)}
        missing = [n for n in names if n not in experts]
        if missing:
            raise JudgeRunError(f"escalation experts not found: {', '.join(missing)}")
        snap["stages"] = [judge_config_dict(judge)] + [judge_config_dict(experts[n]) for n in names]
    return snap


# ------------------------------------------------------------------------------------- start

def _item_output_counts(study: Study) -> list[tuple[int, int]]:
    return list(Item.objects.filter(study=study, is_attention_check=False)
                .annotate(n=Count("outputs")).filter(n__gt=0).order_by("id").values_list("id", "n"))


def slots_per_item(config: dict[str, Any], criteria: Sequence[str], n_outputs: int,
                   rubric: Mapping[str, Any] | None = None) -> int:
    return n_outputs * len(criteria) + len(engine.item_slots(config, n_outputs, rubric))


def make_chunks(counts: Iterable[tuple[int, int]], size: int) -> list[list[int]]:
    """Whole items, grouped until a chunk holds at least `size` outputs."""
    chunks: list[list[int]] = []
    current: list[int] = []
    outputs = 0
    for item_id, n in counts:
        current.append(item_id)
        outputs += n
        if outputs >= size:
            chunks.append(current)
            current, outputs = [], 0
    if current:
        chunks.append(current)
    return chunks


def _enqueue(run: JudgeRun, chunks: list[list[int]]) -> None:
    from judges.tasks import judge_chunk

    queue = run.config.get("queue") or "judges"

    def send() -> None:
        try:
            for ids in chunks:
                judge_chunk.apply_async(args=[run.pk, ids], queue=queue)
        except Exception as exc:
            # The broker stayed unreachable longer than the publish retries wait (e.g. Redis
            # restarting for longer than CELERY_TASK_PUBLISH_RETRY_POLICY allows). The run row
            # is already committed: left active, it would wait forever for chunks that were never
            # queued and block the next start. Fail it, saying why; judge_run_resume re-enqueues
            # exactly the missing items once the broker is back (a chunk that did get out finds
            # the run failed and does nothing).
            log.exception("could not queue the chunks of judge run %s", run.pk)
            error = f"its chunks could not be queued (is Redis up?): {type(exc).__name__}: {exc}"[:2000]
            JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).update(
                status=JudgeRun.Status.FAILED, error=error, finished_at=timezone.now())
            run.refresh_from_db()

    transaction.on_commit(send)  # workers must see the run row and must not run for a rolled-back start


def judge_run_start(*, study: Study, judge: JudgeConfig, user=None, max_cost_usd: float | None = None) -> JudgeRun:
    """Create a run of `judge` on every (non-attention-check) item of `study` and enqueue its chunks.

    `max_cost_usd` caps what the run may spend (default: the judge's method_options.max_cost_usd)."""
    config = judge_config_snapshot(judge, study)
    if max_cost_usd is None:
        max_cost_usd = (config.get("method_options") or {}).get("max_cost_usd")
    if max_cost_usd is not None and max_cost_usd <= 0:
        raise JudgeRunError("the cap must be a positive amount of USD")
    try:
        criteria = engine.output_criteria(config, study.rubric)
    except (ValueError, KeyError) as exc:
        raise JudgeRunError(str(exc)) from exc
    counts = _item_output_counts(study)
    n_outputs = sum(n for _, n in counts)
    try:
        n_expected = sum(slots_per_item(config, criteria, n, study.rubric) for _, n in counts)
    except ValueError as exc:
        raise JudgeRunError(str(exc)) from exc
    if n_expected == 0:
        raise JudgeRunError("this study has no outputs for the judge to score")
    try:
        parts = run_key_parts(config, study.rubric, criteria, study.rubric_version_id)
    except (ValueError, KeyError) as exc:
        raise JudgeRunError(f"could not render this judge's prompts for the study's rubric: {exc}") from exc
    key = run_key(parts)
    try:
        estimate = run_estimate(study=study, config=config)
    except (ValueError, KeyError) as exc:
        raise JudgeRunError(f"could not estimate this run: {exc}") from exc
    reuse = (config.get("method_options") or {}).get("use_cache", True)
    with transaction.atomic():
        Study.objects.select_for_update().get(pk=study.pk)  # one start at a time per study
        if JudgeRun.objects.filter(study=study, judge=judge, status__in=JudgeRun.OPEN).exists():
            raise JudgeRunError(f"judge {judge.name} already has a run in progress on this study")
        previous = (JudgeRun.objects.filter(study=study, key=key, status=JudgeRun.Status.DONE)
                    .order_by("-finished_at").first() if reuse else None)
        run = JudgeRun.objects.create(study=study, judge=judge, config=config, criteria=criteria,
                                      n_outputs=n_outputs, n_expected=n_expected, created_by=user,
                                      key=key, key_parts=parts, reused_from=previous, estimate=estimate,
                                      cost_cap_usd=max_cost_usd)
        if previous is None:
            _enqueue(run, make_chunks(counts, config_chunk_size(config)))
            return run
        _copy_scores(previous, run)
        judge_run_refresh_totals(run=run)
        missing = missing_item_ids(run)  # items added since the previous run, and its failed slots
        if missing:
            _enqueue(run, make_chunks(missing, config_chunk_size(config)))
        else:
            run.started_at = timezone.now()
            run.save(update_fields=["started_at"])
    if not missing:
        judge_run_finish_if_complete(run_id=run.pk)
        run.refresh_from_db()
    return run


def _copy_scores(source: JudgeRun, target: JudgeRun) -> int:
    """The verdicts of `source` (not its errors) as `target`'s, for the items still in the study,
    at no cost: no model was asked. Each copied row says where it came from and what it would have
    cost (seed 003's cost per 10K counts cached calls at that)."""
    table = JudgeScore._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (run_id, item_id, output_id, criterion, value, score, status, raw_text, reasoning,"
            f" tokens_in, tokens_out, cost_usd, doubt, detail, created_at)"
            f" SELECT %s, item_id, output_id, criterion, value, score, status, raw_text, reasoning, 0, 0, 0, doubt,"
            f" detail || jsonb_build_object('reused_from_run', %s, 'cached_cost_usd',"
            f" cost_usd + COALESCE((detail ->> 'cached_cost_usd')::float8, 0)), now() FROM {table}"
            f" WHERE run_id = %s AND status <> 'error' ON CONFLICT DO NOTHING",
            [target.pk, source.pk, source.pk])
        return cursor.rowcount


def judge_run_cancel(*, run: JudgeRun) -> JudgeRun:
    """Stop handing out work: chunks not yet started see the flag and do nothing."""
    with transaction.atomic():
        JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.OPEN).update(
            status=JudgeRun.Status.CANCELLED, finished_at=timezone.now())
        run.refresh_from_db()
        judge_run_refresh_totals(run=run)
    return run


def missing_item_ids(run: JudgeRun) -> list[tuple[int, int]]:
    """(item id, n outputs) of the items that still have unscored slots."""
    done = dict(JudgeScore.objects.filter(run=run).values("item_id").annotate(n=Count("id"))
                .values_list("item_id", "n"))
    return [(item_id, n) for item_id, n in _item_output_counts(run.study)
            if done.get(item_id, 0) < slots_per_item(run.config, run.criteria, n, run.study.rubric)]


def judge_run_resume(*, run: JudgeRun) -> JudgeRun:
    """Re-enqueue only the items with unscored slots of a cancelled or failed run, or of a done
    run some of whose slots ended in error.

    An error row is no verdict, only the record that the backend failed (down, or still failing
    after every retry); so resuming drops those rows and judges their slots again. Scored,
    unparsed and refusal rows are verdicts and are kept: nothing is judged twice.
    """
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        errors = JudgeScore.objects.filter(run=run, status="error")
        if run.status == JudgeRun.Status.DONE:
            # A backend that was down longer than the retries last leaves a done run full of
            # errors; without this its only cure was a whole new run.
            if not errors.exists():
                raise JudgeRunError("this run is done and none of its slots failed: nothing to resume")
        elif run.status == JudgeRun.Status.PAUSED:
            raise JudgeRunError(f"this run is paused: {run.pause_reason or 'raise its cap to resume it'}")
        elif run.status not in (JudgeRun.Status.CANCELLED, JudgeRun.Status.FAILED):
            raise JudgeRunError(f"only a cancelled, failed or done-with-errors run can be resumed "
                                f"(this one is {run.status})")
        if errors.delete()[0]:
            judge_run_refresh_totals(run=run)
        missing = missing_item_ids(run)
        run.status = JudgeRun.Status.RUNNING if run.started_at else JudgeRun.Status.QUEUED
        run.error = ""
        run.finished_at = None
        run.save(update_fields=["status", "error", "finished_at"])
        if missing:
            _enqueue(run, make_chunks(missing, config_chunk_size(run.config)))
    if not missing:
        judge_run_finish_if_complete(run_id=run.pk)
        run.refresh_from_db()
    return run


def judge_runs_requeue_lost(*, held: Callable[[Iterable[str]], Mapping[int, set[int]]],
                            settle_s: float = 5.0) -> dict[int, int]:
    """Re-enqueue the items of active runs that have unscored slots and no chunk message left
    anywhere in the broker; returns {run id: items re-enqueued}.

    Celery's Redis transport pops a message (BRPOP) and only then records it as unacknowledged:
    a Redis restart between the two loses it, and its run would wait forever for the chunk. The
    worker calls this after each (re)connection to the broker. `held(queues)` maps run id to the
    item ids of the judge_chunk messages the broker holds (queued, or delivered and unacked).
    Items are re-enqueued only when two looks `settle_s` apart both find them uncovered, so a
    message between two hands (popped, published on commit, restored) is not taken for lost; a
    chunk sent twice anyway scores nothing twice.
    """
    def uncovered() -> dict[int, set[tuple[int, int]]]:
        runs = list(JudgeRun.objects.filter(status__in=JudgeRun.ACTIVE).select_related("study"))
        covered = held({run.config.get("queue") or "judges" for run in runs}) if runs else {}
        found = {}
        for run in runs:
            missing = missing_item_ids(run)
            if not missing:  # every slot scored, yet active: its counters lag; end it on a recount
                judge_run_finish_if_complete(run_id=run.pk, recount=True)
            items = {(item_id, n) for item_id, n in missing if item_id not in covered.get(run.pk, ())}
            if items:
                found[run.pk] = items
        return found

    first = uncovered()
    if not first:
        return {}
    time.sleep(settle_s)
    requeued = {}
    for run_id, items in uncovered().items():
        lost = sorted(items & first.get(run_id, set()))
        if not lost:
            continue
        with transaction.atomic():
            run = JudgeRun.objects.select_for_update().get(pk=run_id)
            if run.status not in JudgeRun.ACTIVE:
                continue
            log.warning("judge run %s: the chunks of %d items were lost by the broker; enqueued again",
                        run_id, len(lost))
            _enqueue(run, make_chunks(lost, config_chunk_size(run.config)))
        requeued[run_id] = len(lost)
    return requeued


# ------------------------------------------------------------------------------------- one chunk

@dataclass
class ChunkOutcome:
    written: int = 0
    retry: bool = False  # some slots failed on retryable errors and were left for the next attempt
    skipped: str | None = None  # why nothing was done (run cancelled, done, ...)


@dataclass(frozen=True)
class RetryPolicy:
    queue: str = "judges"
    max_retries: int = DEFAULT_TASK_RETRIES
    backoff_s: float = DEFAULT_TASK_BACKOFF_S


def retry_policy(run_id: int) -> RetryPolicy:
    config = JudgeRun.objects.filter(pk=run_id).values_list("config", flat=True).first() or {}
    mo = config.get("method_options") or {}
    return RetryPolicy(queue=config.get("queue") or "judges",
                       max_retries=int(mo.get("task_max_retries", DEFAULT_TASK_RETRIES)),
                       backoff_s=float(mo.get("task_retry_backoff_s", DEFAULT_TASK_BACKOFF_S)))


def item_payload(item: Item, outputs: Sequence[Output]) -> dict[str, Any]:
    """The plain item dict the prompts read. System names stay out: judges are blinded too."""
    return {"id": item.external_id, "context": item.context, "context_kind": item.context_kind,
            "metadata": item.metadata or {},
            "outputs": [{"content": o.content, "kind": o.kind, "metadata": o.metadata or {}} for o in outputs]}


def judge_chunk_process(*, run_id: int, item_ids: Sequence[int], final_attempt: bool = False) -> ChunkOutcome:
    """Score the unscored slots of these items; called by the Celery task (and safe to call twice)."""
    run = JudgeRun.objects.select_related("study__rubric_version").filter(pk=run_id).first()
    if run is None:
        return ChunkOutcome(skipped="no such run")
    outcome = ChunkOutcome()
    if run.status not in JudgeRun.ACTIVE:
        outcome.skipped = run.status
        return outcome
    JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.QUEUED).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now())

    items = list(Item.objects.filter(pk__in=item_ids, study_id=run.study_id).prefetch_related("outputs"))
    done = set(JudgeScore.objects.filter(run=run, item_id__in=item_ids).values_list("item_id", "output_id", "criterion"))
    payloads, pending, where = [], {}, {}
    for item in items:
        outputs = sorted(item.outputs.all(), key=lambda o: o.position)
        payloads.append(item_payload(item, outputs))
        for idx, out in enumerate(outputs):
            where[(item.external_id, idx)] = (item, out)
            todo = [c for c in run.criteria if (item.pk, out.pk, c) not in done]
            if todo:
                pending[(item.external_id, idx)] = todo
        where[(item.external_id, None)] = (item, None)
        todo = [s for s in engine.item_slots(run.config, len(outputs), run.study.rubric, item.external_id)
                if (item.pk, None, s) not in done]
        if todo:
            pending[(item.external_id, None)] = todo
    if not pending:
        judge_run_finish_if_complete(run_id=run.pk, recount=True)
        return outcome

    if batch_run(run.config):
        return batch_chunk_process(run=run, payloads=payloads, pending=pending, where=where)
    reserved = 0.0
    if run.cost_cap_usd is not None:  # no cap, no lock on the run row
        reserved = sum(len(slots) for slots in pending.values()) * slot_max_cost(run)
        room, why = cost_reserve(run_id=run.pk, amount=reserved)
        if not room:
            judge_run_pause(run_id=run.pk, reason=why)
            outcome.skipped = "paused"
            return outcome
    cache = DBCache()
    limiter = rate_limiter(run.config)
    try:
        judged = asyncio.run(_judge(run.config, run.study.rubric, payloads, pending, cache, limiter))
    except Exception as exc:  # a bug or a broken configuration: fail the run visibly, never loop on it
        log.exception("judge run %s failed", run.pk)
        JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).update(
            status=JudgeRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], finished_at=timezone.now())
        cost_release(run_id=run.pk, amount=reserved)
        return outcome
    finally:
        cache.close()
        if limiter is not None:
            count_rate_limited(run_id=run.pk, n=limiter.rate_limited)
    try:
        return _write_judged(run, judged, pending, where, final_attempt, outcome, reserved=reserved)
    except BaseException:
        cost_release(run_id=run.pk, amount=reserved)
        raise


async def _judge(config: dict, rubric: dict, payloads: list, pending: dict, cache: DBCache,
                 limiter: Any) -> list[engine.Judged]:
    """The judge's own backend shares its per-minute quota with every worker through `limiter`."""
    def backend_for(c: Mapping[str, Any]) -> Any:
        backend = engine.build_backend(c)
        if c.get("name") == config["name"] and hasattr(backend, "limiter"):
            backend.limiter = limiter
        return backend

    return await engine.judge_items(config, rubric, payloads, pending, cache,
                                    backend_for=backend_for if limiter is not None else None)


def _write_judged(run: JudgeRun, judged: Sequence[engine.Judged], pending: Mapping, where: Mapping,
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
        rows.append(_score_row(run, item, out, j, crit_defs.get(j.criterion)))
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
        raw_text=j.raw_text, reasoning=j.reasoning or "", tokens_in=j.tokens_in, tokens_out=j.tokens_out,
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


def judge_run_finish_if_complete(*, run_id: int, recount: bool = False) -> bool:
    """Mark the run done once every slot has its score; exactly one caller wins and writes the files.

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
        run.status, run.finished_at = JudgeRun.Status.DONE, timezone.now()
        run.save(update_fields=["status", "finished_at"])
    from judges.services.files import write_run_files
    from annotation.services.routing_flag import routing_refresh_request

    routing_refresh_request(run.study_id, delay_s=0.5)  # a routing study re-ranks its items on the new judgements
    try:
        write_run_files(run)
    except OSError:
        log.exception("could not write the files of judge run %s (they are rebuilt on download)", run_id)
    return True
