"""Celery tasks of the judges: each takes ids, re-fetches, and calls a service.

`judge_chunk` is idempotent (scores are unique per run/output/criterion and inserted with
ON CONFLICT DO NOTHING), so it may be acknowledged late and redelivered when a worker
dies mid-chunk. It retries only when the backend failed with a retryable error (rate
limit, 5xx, timeout), with exponential backoff and jitter; the last attempt stores the
failure as an error score, so the run still ends.

The services queue these tasks by name (config.celery.registered_task) and never
import this module, so it imports them at its top: the lifecycle goes one way.

`requeue_lost_chunks` runs in the worker after each (re)connection to the broker
(config/celery.py RequeueLostWork): a Redis restart can lose a message being handed out.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from typing import Iterable

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from config.celery import took_too_long
from judges.services.batches import batch_run_advance
from judges.services.runs import judge_chunk_process, judge_run_fail, judge_runs_requeue_lost, retry_policy

log = logging.getLogger(__name__)


@shared_task(bind=True, name="judges.tasks.judge_chunk", acks_late=True, reject_on_worker_lost=True,
             max_retries=None, ignore_result=True)
def judge_chunk(self, run_id: int, item_ids: list[int], attempt: int | None = None) -> dict:
    retries = self.request.retries
    policy = retry_policy(run_id)
    try:
        outcome = judge_chunk_process(run_id=run_id, item_ids=item_ids, final_attempt=retries >= policy.max_retries,
                                      attempt=attempt)
    except SoftTimeLimitExceeded:  # past the judges' time limit (config/celery.py): the run says so and ends
        judge_run_fail(run_id=run_id, error=took_too_long("judges"))
        return {"written": 0, "skipped": "time limit"}
    if outcome.retry:
        countdown = min(policy.backoff_s * 2 ** retries, 300.0) * random.uniform(0.5, 1.0)
        raise self.retry(countdown=countdown, max_retries=policy.max_retries, queue=policy.queue)
    return {"written": outcome.written, "skipped": outcome.skipped}


def broker_held_chunks(queues: Iterable[str]) -> dict[int, set[int]]:
    """Run id -> item ids of the judge_chunk messages the broker holds (queued, or delivered and unacked)."""
    from config.broker import broker_task_args

    held: dict[int, set[int]] = defaultdict(set)
    for args in broker_task_args(judge_chunk.name, queues):
        try:
            held[int(args[0])].update(int(i) for i in args[1])
        except (ValueError, TypeError, IndexError):
            continue
    return held


@shared_task(name="judges.tasks.requeue_lost_chunks", ignore_result=True)
def requeue_lost_chunks(settle_s: float = 5.0) -> dict[int, int]:
    """Re-enqueue the chunks of active runs whose messages the broker lost (config/celery.py)."""
    return judge_runs_requeue_lost(held=broker_held_chunks, settle_s=settle_s)


@shared_task(name="judges.tasks.routing_refresh", ignore_result=True)
def routing_refresh(study_id: int) -> None:
    """Recompute a routing study's priorities, budget and comparisons (judges.services.routing)."""
    from annotation.models import Study
    from judges.services.routing import routing_refresh as refresh

    study = Study.objects.filter(pk=study_id).select_related("rubric_version").first()
    if study is not None:
        refresh(study=study)


@shared_task(name="judges.tasks.active_draw_next", ignore_result=True)
def active_draw_next(study_id: int, round_no: int | None = None) -> dict | None:
    """Round `round_no` (default: the next) of an active_inference study, once every item of the round
    before has its raters (annotation.services.active_inference); a no-op when that round is drawn
    already or the last still waits, so a second delivery or a second request draws nothing. A round
    that sent no item to humans is rated already: the next is drawn at once, as no rating will ask."""
    from annotation.models import Study
    from annotation.services.active_inference import ActiveDrawError, active_draw
    from judges.selectors import study_jury

    study = Study.objects.filter(pk=study_id).first()
    out = None
    while study is not None:
        try:
            out = active_draw(study=study, jury=study_jury(study), only_when_done=True, round_no=round_no)
        except ActiveDrawError:
            break
        if out["drawn"] or not out["left"]:
            break
        round_no = out["round"] + 1
    return out


@shared_task(name="judges.tasks.requeue_lost_draws", ignore_result=True)
def requeue_lost_draws() -> list[int]:
    """Draw the due rounds of active_inference studies whose request was lost (config/celery.py's lost-work
    sweep): a round whose round before is rated, or the pilot once the judges have scored. The draw checks
    the round under the items' lock, so a request still in transit draws nothing after it. Returns the ids
    of the studies drawn."""
    from annotation.services.active_inference import active_rounds_waiting, next_round
    from judges.selectors import study_jury

    drawn = []
    for study in active_rounds_waiting():
        round_no = next_round(study)
        if round_no == 0 and not study_jury(study):
            continue  # the pilot waits for the judges' scores (annotation.services.active_inference)
        if active_draw_next(study.pk, round_no) is not None:
            log.info("round %s of study %s: its draw request was lost; drawn now", round_no, study.slug)
            drawn.append(study.pk)
    return drawn


@shared_task(name="judges.tasks.batch_poll", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def batch_poll(run_id: int) -> dict:
    """Advance a batch run (judges.services.batches): submit, poll, read results, enqueue again."""
    return batch_run_advance(run_id=run_id)
