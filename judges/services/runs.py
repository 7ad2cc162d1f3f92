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
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from celery.exceptions import SoftTimeLimitExceeded
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import Item, Study
from config.celery import took_too_long
from config.limits import clip
from judges.config import FIELDS
from judges.models import JudgeConfig, JudgeRun, JudgeScore
from judges.plan import JudgePlan
from judges.services import engine
from judges.services.batches import batch_chunk_process, batch_run
from judges.services.budget import (
    cost_release, cost_reserve, count_rate_limited, judge_run_pause, rate_limiter, slot_max_cost,
)
from judges.services.estimate import pending_max_cost, run_estimate
from judges.services.run_items import (
    enqueue_chunks, enqueue_items, item_output_counts, item_payload, make_chunks, missing_item_ids,
    output_slot_counts,
)
from judges.services.preflight import forget_passes, preflight_problem
from judges.services.run_keys import run_key, run_key_parts
from judges.services.run_scores import (
    ChunkOutcome, judge_run_finish_if_complete, judge_run_refresh_totals, write_judged,
)
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

def judge_run_start(*, study: Study, judge: JudgeConfig, user=None, max_cost_usd: float | None = None) -> JudgeRun:
    """Create a run of `judge` on every (non-attention-check) item of `study` and enqueue its chunks.

    `max_cost_usd` caps what the run may spend (default: the judge's method_options.max_cost_usd)."""
    config = judge_config_snapshot(judge, study)
    if max_cost_usd is None:
        max_cost_usd = (config.get("method_options") or {}).get("max_cost_usd")
    if max_cost_usd is not None and max_cost_usd <= 0:
        raise JudgeRunError("the cap must be a positive amount of USD")
    try:
        plan = JudgePlan.build(config, study.rubric)
    except (ValueError, KeyError) as exc:
        raise JudgeRunError(str(exc)) from exc
    criteria = list(plan.criteria)
    counts = item_output_counts(study)
    n_outputs = sum(n for _, n in counts)
    try:
        n_expected = (sum(output_slot_counts(plan, study).values()) if plan.per_step
                      else sum(plan.slots_per_item(n) for _, n in counts))
    except ValueError as exc:
        raise JudgeRunError(str(exc)) from exc
    if n_expected == 0:
        raise JudgeRunError("this study has no outputs for the judge to score")
    try:
        parts = run_key_parts(plan, study.rubric, criteria, study.rubric_version_id)
    except (ValueError, KeyError) as exc:
        raise JudgeRunError(f"could not render this judge's prompts for the study's rubric: {exc}") from exc
    key = run_key(parts)
    try:
        estimate = run_estimate(study=study, config=config, plan=plan)
    except (ValueError, KeyError) as exc:
        raise JudgeRunError(f"could not estimate this run: {exc}") from exc
    reuse = (config.get("method_options") or {}).get("use_cache", True)
    with transaction.atomic():
        Study.objects.select_for_update().get(pk=study.pk)  # one start at a time per study
        if JudgeRun.objects.filter(study=study, judge=judge, status__in=JudgeRun.OPEN).exists():
            raise JudgeRunError(f"judge {judge.name} already has a run in progress on this study")
        previous = (JudgeRun.objects.filter(study=study, key=key, status__in=JudgeRun.FINISHED)
                    .order_by("-finished_at").first() if reuse else None)
        run = JudgeRun.objects.create(study=study, judge=judge, config=config, criteria=criteria,
                                      n_outputs=n_outputs, n_expected=n_expected, created_by=user,
                                      key=key, key_parts=parts, reused_from=previous, estimate=estimate,
                                      cost_cap_usd=max_cost_usd)
        if previous is None:
            enqueue_chunks(run, make_chunks(counts, plan.limits.chunk_size))
            return run
        run.n_reused = _copy_scores(previous, run)
        run.save(update_fields=["n_reused"])
        judge_run_refresh_totals(run=run)
        missing = missing_item_ids(run)  # items added since the previous run, and its failed slots
        if missing:
            enqueue_items(run, missing)
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
        if run.status in JudgeRun.FINISHED:
            # A backend that was down longer than the retries last leaves a run done with errors;
            # without this its only cure was a whole new run.
            if not errors.exists():
                raise JudgeRunError("this run is done and none of its slots failed: nothing to resume")
        elif run.status == JudgeRun.Status.PAUSED:
            raise JudgeRunError(f"this run is paused: {run.pause_reason or 'raise its cap to resume it'}")
        elif run.status not in (JudgeRun.Status.CANCELLED, JudgeRun.Status.FAILED):
            raise JudgeRunError(f"only a cancelled, failed or done with errors run can be resumed "
                                f"(this one is {run.status})")
        if errors.delete()[0]:
            judge_run_refresh_totals(run=run)
        missing = missing_item_ids(run)
        run.status = JudgeRun.Status.RUNNING if run.started_at else JudgeRun.Status.QUEUED
        run.error = ""
        run.finished_at = None
        run.attempt += 1
        run.save(update_fields=["status", "error", "finished_at", "attempt"])
        if missing:
            enqueue_items(run, missing)
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
            enqueue_items(run, lost)
        requeued[run_id] = len(lost)
    return requeued


# ------------------------------------------------------------------------------------- one chunk

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


def judge_run_fail(*, run_id: int, error: str) -> None:
    """End an active run as failed, with the reason its readers see."""
    JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE).update(
        status=JudgeRun.Status.FAILED, error=clip("error.text", error), finished_at=timezone.now())


def judge_chunk_process(*, run_id: int, item_ids: Sequence[int], final_attempt: bool = False,
                        attempt: int | None = None) -> ChunkOutcome:
    """Score the unscored slots of these items; called by the Celery task (and safe to call twice). `attempt`:
    the run's attempt the chunk was sent for; a chunk of an earlier one (held by a worker for a retry while the
    run stopped, back after it went on) does nothing, as the new attempt's chunks ask for its items."""
    run = JudgeRun.objects.select_related("study__rubric_version").filter(pk=run_id).first()
    if run is None:
        return ChunkOutcome(skipped="no such run")
    outcome = ChunkOutcome()
    outcome.skipped = _not_current(run.status, run.attempt, attempt)
    if outcome.skipped:
        return outcome
    JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.QUEUED).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now())

    items = list(Item.objects.filter(pk__in=item_ids, study_id=run.study_id).prefetch_related("outputs"))
    done = set(JudgeScore.objects.filter(run=run, item_id__in=item_ids).values_list("item_id", "output_id", "criterion"))
    plan = JudgePlan.of(run.config, run.study.rubric)
    payloads, pending, where = [], {}, {}
    for item in items:
        outputs = sorted(item.outputs.all(), key=lambda o: o.position)
        payloads.append(item_payload(item, outputs))
        for idx, out in enumerate(outputs):
            where[(item.external_id, idx)] = (item, out)
            slots = plan.output_slots(out.content, out.kind) if plan.per_step else run.criteria
            todo = [c for c in slots if (item.pk, out.pk, c) not in done]
            if todo:
                pending[(item.external_id, idx)] = todo
        where[(item.external_id, None)] = (item, None)
        todo = [s for s in plan.item_slots(len(outputs), item.external_id)
                if (item.pk, None, s) not in done]
        if todo:
            pending[(item.external_id, None)] = todo
    if not pending:
        judge_run_finish_if_complete(run_id=run.pk, recount=True)
        return outcome

    problem = preflight_problem(run.config)
    if problem and problem.transient and not final_attempt:  # e.g. a server still starting: ask nothing yet
        outcome.retry, outcome.skipped = True, "endpoint unreachable"
        return outcome
    if problem:  # this worker cannot ask the judge: fail the run now, saying why, not with a row of errors
        judge_run_fail(run_id=run.pk, error=problem.why)
        outcome.skipped = "failed"
        return outcome
    # The preflight waited on the network. Meanwhile another chunk may have failed the run, a user cancelled it,
    # or it went on as a new attempt whose chunks ask for these items: this one then asks nothing (a full run saw
    # 30 slots asked twice when the endpoint came up between a chunk's first look and its preflight).
    now = JudgeRun.objects.filter(pk=run.pk).values_list("status", "attempt").first()
    outcome.skipped = "no such run" if now is None else _not_current(*now, attempt)
    if outcome.skipped:
        return outcome
    if batch_run(run.config):
        return batch_chunk_process(run=run, payloads=payloads, pending=pending, where=where)
    reserved = 0.0
    if run.cost_cap_usd is not None:  # no cap, no lock on the run row
        reserved = max(sum(len(slots) for slots in pending.values()) * slot_max_cost(run),
                       pending_max_cost(plan, run.study.rubric, payloads, pending) or 0.0)
        room, why = cost_reserve(run_id=run.pk, amount=reserved)
        if not room:
            judge_run_pause(run_id=run.pk, reason=why)
            outcome.skipped = "paused"
            return outcome
    cache = DBCache()
    limiter = rate_limiter(run.config)
    try:
        judged = asyncio.run(_judge(plan, payloads, pending, cache, limiter))
    except Exception as exc:  # a bug or a broken configuration: fail the run visibly, never loop on it
        log.exception("judge run %s failed", run.pk)
        judge_run_fail(run_id=run.pk, error=took_too_long("judges") if isinstance(exc, SoftTimeLimitExceeded)
                       else f"{type(exc).__name__}: {exc}")
        cost_release(run_id=run.pk, amount=reserved)
        return outcome
    finally:
        cache.close()
        if limiter is not None:
            count_rate_limited(run_id=run.pk, n=limiter.rate_limited)
    try:
        outcome = write_judged(run, judged, pending, where, final_attempt, outcome, reserved=reserved)
    except BaseException:
        cost_release(run_id=run.pk, amount=reserved)
        raise
    if outcome.retry:
        forget_passes(run.config)
    return outcome


def _not_current(status: str, run_attempt: int, attempt: int | None) -> str | None:
    """Why a chunk sent for `attempt` must not ask the judge now: the run's status when it is not active,
    "superseded" when the run went on as a later attempt; None when the chunk is the run's current work."""
    if status not in JudgeRun.ACTIVE:
        return status
    if attempt is not None and attempt != run_attempt:
        return "superseded"
    return None


async def _judge(plan: JudgePlan, payloads: list, pending: dict, cache: DBCache,
                 limiter: Any) -> list[engine.Judged]:
    """The judge's own backend shares its per-minute quota with every worker through `limiter`."""
    def backend_for(c: Mapping[str, Any]) -> Any:
        backend = engine.build_backend(c)
        if c.get("name") == plan.name and hasattr(backend, "limiter"):
            backend.limiter = limiter
        return backend

    return await engine.judge_items(plan, plan.rubric, payloads, pending, cache,
                                    backend_for=backend_for if limiter is not None else None)
