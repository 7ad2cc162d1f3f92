"""Batch runs: the run's requests go to the provider's batch API; its answers come back to their slots.

A chunk of a batch run drives the method as any chunk does, with a backend that answers from
the run's stored batch answers (JudgeBatchRequest, keyed by custom_id = sha256 of what is asked)
and records every request it has no answer for. Slots whose requests wait are left unscored; the
others are written as usual (one row per slot: JudgeScore's unique constraint). The poll task
(judges.tasks.batch_poll, by name, idempotent) submits what waits, reads each ended batch's results
into the request rows once (an UPDATE of rows still `submitted` in that batch: a result read twice
changes nothing), puts expired, canceled and transiently failed requests back to wait for the next
batch (up to batch_max_attempts), and enqueues the items with unscored slots again, whose
chunks now find their answers (or record the next round of a method that asks twice). Everything
is in the database: a worker killed at any point leaves a state the next poll or chunk continues.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, Callable, Mapping, Sequence, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from config.celery import registered_task
from judges.backends.base import Backend, JudgeRequest, Result
from judges.backends.errors import BackendError, BatchPending, PermanentBackendError
from judges.batch_apis import batch_api, batch_api_name, request_from_dict, request_to_dict
from judges.cache import cache_key, response_from_dict, response_to_dict
from judges.models import JudgeBatch, JudgeBatchRequest, JudgeRun
from judges.services import engine
from judges.services.budget import cost_release, cost_reserve, judge_run_pause
from judges.services.run_items import enqueue_items, missing_item_ids
from judges.services.run_scores import ChunkOutcome, write_judged

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_PER_BATCH = 50_000  # OpenAI's limit per batch file; Anthropic's is 100,000
DEFAULT_POLL_S = 30.0
DEFAULT_MAX_ATTEMPTS = 3
UNSENT_GRACE_S = 120.0  # a batch row without a provider id this old was never sent (its worker died)
Status = JudgeBatchRequest.Status
POLL_TASK = "judges.tasks.batch_poll"  # sent by name: the services never import the tasks module


def batch_run(config: Mapping[str, Any]) -> bool:
    return bool((config.get("method_options") or {}).get("batch"))


def poll_interval(config: Mapping[str, Any]) -> float:
    return float((config.get("method_options") or {}).get("batch_poll_s") or DEFAULT_POLL_S)


def _identity(config: Mapping[str, Any]) -> dict[str, Any]:
    return {"batch": batch_api_name(dict(config)), "model": config["model"], "endpoint": config.get("endpoint")}


class BatchCollector(Backend):
    """Answers from the run's stored batch answers; records the requests it has none for."""

    name = "batch"

    def __init__(self, run: JudgeRun) -> None:
        self.run_id = run.pk
        self.ident = _identity(run.config)
        self.recorded = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-batch")

    def identity(self) -> dict[str, Any]:
        return self.ident

    def _db(self, fn: Callable[[], T]) -> T:
        return self._thread.submit(fn).result()

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        keys = [cache_key(self.ident, r) for r in requests]

        def lookup() -> dict[str, JudgeBatchRequest]:
            found = {r.custom_id: r for r in JudgeBatchRequest.objects.filter(run_id=self.run_id, custom_id__in=keys)}
            new = {k: r for k, r in zip(keys, requests) if k not in found}
            JudgeBatchRequest.objects.bulk_create(
                [JudgeBatchRequest(run_id=self.run_id, custom_id=k, request=request_to_dict(r)) for k, r in new.items()],
                ignore_conflicts=True)
            self.recorded += len(new)
            return found

        found = self._db(lookup)
        out: list[Result] = []
        for key in keys:
            row = found.get(key)
            if row is not None and row.status == Status.SUCCEEDED:
                answer = response_from_dict(row.response)
                answer.cached = False  # paid for by this run's batch: its slots carry the cost
                out.append(answer)
            elif row is not None and row.status == Status.FAILED:
                out.append(PermanentBackendError(f"batch request failed: {row.error}"))
            else:
                out.append(BatchPending("waiting for the provider's batch"))
        return out

    def close(self) -> None:
        self._db(lambda: connection.close())
        self._thread.shutdown(wait=True)


def batch_chunk_process(*, run: JudgeRun, payloads: list, pending: dict, where: dict) -> ChunkOutcome:
    collector = BatchCollector(run)
    try:
        judged = asyncio.run(engine.judge_items(run.config, run.study.rubric, payloads, pending, None,
                                                backend_for=lambda c: collector))
    finally:
        collector.close()
    outcome = write_judged(run, judged, pending, where, False, ChunkOutcome())
    if outcome.retry:  # some slots wait for their batch: the poll submits them and enqueues them again
        outcome.retry = False
        outcome.skipped = "waiting for batch"
        batch_poll_schedule(run_id=run.pk, countdown=1.0 if collector.recorded else poll_interval(run.config))
    return outcome


# ------------------------------------------------------------------------------------- polling

def _redis() -> Any:
    import redis

    return redis.Redis.from_url(settings.REDIS_URL)


def batch_poll_schedule(*, run_id: int, countdown: float) -> bool:
    """Schedule one poll of the run, unless one is scheduled already (a Redis key, cleared when the
    poll starts and expiring on its own, so a lost message does not stop the run for long)."""
    if not _redis().set(f"concord:batch-poll:{run_id}", 1, nx=True, ex=int(countdown) + 30):
        return False
    queue = (JudgeRun.objects.filter(pk=run_id).values_list("config", flat=True).first() or {}).get("queue")
    transaction.on_commit(lambda: registered_task(POLL_TASK).apply_async(args=[run_id], countdown=countdown,
                                                                         queue=queue or "judges"))
    return True


def _call_max_cost(run: JudgeRun) -> float:
    est = run.estimate or {}
    return float(est.get("max_cost_usd") or 0.0) / est["calls"] if est.get("calls") else 0.0


def batch_run_advance(*, run_id: int) -> dict[str, Any]:
    """One poll: read ended batches, give up on unsent ones, submit waiting requests, enqueue the
    items whose answers came in. One poller per run at a time (an advisory lock); safe to repeat."""
    _redis().delete(f"concord:batch-poll:{run_id}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [0x42415443, run_id])  # "BATC"
        if not cursor.fetchone()[0]:
            return {"skipped": "another poll of this run is under way"}
    try:
        return _advance(run_id)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [0x42415443, run_id])


def _advance(run_id: int) -> dict[str, Any]:
    run = JudgeRun.objects.select_related("study").filter(pk=run_id).first()
    if run is None or run.status not in JudgeRun.ACTIVE:
        return {"skipped": run.status if run else "no such run"}
    api = batch_api(run.config)
    report: dict[str, Any] = {"ended": 0, "ingested": 0, "submitted": 0}
    stale = timezone.now() - timedelta(seconds=UNSENT_GRACE_S)
    for batch in run.batches.filter(ended=False).order_by("id"):
        if not batch.provider_id:
            if batch.created_at < stale:  # its worker died between our row and the provider's answer
                _end_batch(batch, api=None, error="never sent (its worker stopped first)")
            continue
        try:
            state = api.state(batch.provider_id)
        except BackendError as exc:
            log.warning("judge run %s: polling %s failed: %s", run_id, batch, exc)
            continue
        batch.status, batch.counts = state.status, {**batch.counts, **state.counts}
        batch.polled_at = timezone.now()
        batch.save(update_fields=["status", "counts", "polled_at"])
        if state.ended:
            report["ended"] += 1
            report["ingested"] += _end_batch(batch, api=api, error=state.error if state.failed else "")
    waiting = JudgeBatchRequest.objects.filter(run=run, status=Status.PENDING)
    max_attempts = int((run.config.get("method_options") or {}).get("batch_max_attempts") or DEFAULT_MAX_ATTEMPTS)
    groups: dict[str, list[JudgeBatchRequest]] = {}
    for row in waiting.order_by("id")[:MAX_PER_BATCH * 4]:
        groups.setdefault(api.endpoint(request_from_dict(row.request)), []).append(row)
    for rows in groups.values():
        for start in range(0, len(rows), MAX_PER_BATCH):
            part = rows[start:start + MAX_PER_BATCH]
            amount = len(part) * _call_max_cost(run)
            room, why = cost_reserve(run_id=run.pk, amount=amount, batch=True)
            if not room:
                judge_run_pause(run_id=run.pk, reason=why)
                report["paused"] = why
                return report
            report["submitted"] += _submit(run, api, part, amount, max_attempts)
    outstanding = run.batches.filter(ended=False).exists() or waiting.exists()
    if report["ended"] or not outstanding:  # answers (or failures for good) came in: judge those slots now
        missing = missing_item_ids(run)
        if missing:
            enqueue_items(run, missing)
    if outstanding:
        batch_poll_schedule(run_id=run.pk, countdown=poll_interval(run.config))
    report["outstanding"] = outstanding
    return report


def _submit(run: JudgeRun, api: Any, rows: list[JudgeBatchRequest], reserved: float, max_attempts: int) -> int:
    """Claim the rows for a new batch row (committed first, so a crash cannot send them twice from
    here), then send it; a provider refusal puts them back to wait, or fails them after their attempts."""
    with transaction.atomic():
        batch = JudgeBatch.objects.create(run=run, api=api.name, n_requests=len(rows),
                                          counts={"reserved_usd": reserved})
        claimed = JudgeBatchRequest.objects.filter(pk__in=[r.pk for r in rows], status=Status.PENDING).update(
            status=Status.SUBMITTED, batch=batch)
    if claimed != len(rows):  # another poller took some: give this batch up whole, they wait for the next
        _end_batch(batch, api=None, error="claimed by another poll")
        return 0
    try:
        provider_id, file_id = api.submit([(r.custom_id, request_from_dict(r.request)) for r in rows])
    except (BackendError, ValueError) as exc:
        log.warning("judge run %s: batch submission failed: %s", run.pk, exc)
        permanent = isinstance(exc, (PermanentBackendError, ValueError))
        _end_batch(batch, api=None, error=f"{type(exc).__name__}: {exc}", give_up=permanent, max_attempts=max_attempts)
        return 0
    batch.provider_id, batch.input_file_id, batch.status = provider_id, file_id, "submitted"
    batch.save(update_fields=["provider_id", "input_file_id", "status"])
    return len(rows)


def _end_batch(batch: JudgeBatch, *, api: Any, error: str = "", give_up: bool = False,
               max_attempts: int | None = None) -> int:
    """Read the batch's results into its requests (once), put the rest back to wait (or fail them
    after their attempts), release its reservation; returns the requests answered."""
    run = batch.run
    if max_attempts is None:
        max_attempts = int((run.config.get("method_options") or {}).get("batch_max_attempts")
                           or DEFAULT_MAX_ATTEMPTS)
    answered = 0
    outcomes = list(api.results(batch.provider_id)) if api is not None and not error else []
    with transaction.atomic():
        locked = JudgeBatch.objects.select_for_update().get(pk=batch.pk)
        if locked.ended:
            return 0
        for o in outcomes:
            rows = JudgeBatchRequest.objects.filter(run=run, batch=batch, custom_id=o.custom_id,
                                                    status=Status.SUBMITTED)
            if o.response is not None:
                answered += rows.update(status=Status.SUCCEEDED, response=response_to_dict(o.response), error="")
            elif o.retry:
                _retry(rows, o.error, max_attempts)
            else:
                rows.update(status=Status.FAILED, error=o.error[:2000])
        left = JudgeBatchRequest.objects.filter(batch=batch, status=Status.SUBMITTED)
        if give_up:
            left.update(status=Status.FAILED, error=error[:2000])
        else:  # no result for them (a failed or unsent batch, a line missing): they wait for the next batch
            _retry(left, error or "the batch returned no result for this request", max_attempts)
        locked.ended, locked.ended_at, locked.error = True, timezone.now(), error[:2000]
        locked.save(update_fields=["ended", "ended_at", "error"])
        cost_release(run_id=run.pk, amount=float((locked.counts or {}).get("reserved_usd") or 0.0))
    return answered


def _retry(rows: Any, error: str, max_attempts: int) -> None:
    rows.filter(attempts__gte=max_attempts - 1).update(status=Status.FAILED, attempts=F("attempts") + 1,
                                                       error=f"after {max_attempts} batches: {error}"[:2000])
    rows.update(status=Status.PENDING, batch=None, attempts=F("attempts") + 1,
                                                 error=error[:2000])
