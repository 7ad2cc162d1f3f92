"""A judge run's items and slots: how many each item has, which are still unscored, how they are
cut into chunks, and queueing those chunks.

The bottom of the run's lifecycle (runs -> batches, budget, estimate -> here): everything that
queues a run's items again (a resume, a raised cap, a batch's answers) calls `enqueue_items`,
which sends the chunk task by name, so no service imports the tasks module.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation.models import Item, Output, Study
from config.celery import registered_task
from judges.config import chunk_size as config_chunk_size
from judges.models import JudgeRun, JudgeScore
from judges.plan import JudgePlan
from judges.services import engine

log = logging.getLogger(__name__)

CHUNK_TASK = "judges.tasks.judge_chunk"


def item_output_counts(study: Study) -> list[tuple[int, int]]:
    """(item id, n outputs) of the study's items a judge scores, in id order."""
    return list(Item.objects.filter(study=study, is_attention_check=False)
                .annotate(n=Count("outputs")).filter(n__gt=0).order_by("id").values_list("id", "n"))


def slots_per_item(config: dict[str, Any], criteria: Sequence[str], n_outputs: int,
                   rubric: Mapping[str, Any] | None = None) -> int:
    return n_outputs * len(criteria) + len(engine.item_slots(config, n_outputs, rubric))  # JudgePlan.slots_per_item


def output_slot_counts(plan: JudgePlan, study: Study) -> dict[int, int]:
    """item id -> its slots, where they depend on the outputs' content (a judge with per-step criteria)."""
    out: dict[int, int] = defaultdict(int)
    rows = (Output.objects.filter(item__study=study, item__is_attention_check=False)
            .values_list("item_id", "content", "kind"))
    for item_id, content, kind in rows.iterator(chunk_size=500):
        out[item_id] += len(plan.output_slots(content, kind))
    return dict(out)


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


def missing_item_ids(run: JudgeRun) -> list[tuple[int, int]]:
    """(item id, n outputs) of the items that still have unscored slots."""
    done = dict(JudgeScore.objects.filter(run=run).values("item_id").annotate(n=Count("id"))
                .values_list("item_id", "n"))
    plan = JudgePlan.of(run.config, run.study.rubric)
    if plan.per_step:
        expected = output_slot_counts(plan, run.study)
        return [(item_id, n) for item_id, n in item_output_counts(run.study)
                if done.get(item_id, 0) < expected.get(item_id, 0)]
    return [(item_id, n) for item_id, n in item_output_counts(run.study)
            if done.get(item_id, 0) < slots_per_item(run.config, run.criteria, n, run.study.rubric)]


def item_payload(item: Item, outputs: Sequence[Output]) -> dict[str, Any]:
    """The plain item dict the prompts read. System names stay out: judges are blinded too."""
    return {"id": item.external_id, "context": item.context, "context_kind": item.context_kind,
            "metadata": item.metadata or {},
            "outputs": [{"content": o.content, "kind": o.kind, "metadata": o.metadata or {}} for o in outputs]}


def enqueue_chunks(run: JudgeRun, chunks: list[list[int]]) -> None:
    """Queue one chunk task per chunk once the caller's transaction commits."""
    queue = run.config.get("queue") or "judges"

    def send() -> None:
        try:
            for ids in chunks:
                registered_task(CHUNK_TASK).apply_async(args=[run.pk, ids], kwargs={"attempt": run.attempt},
                                                        queue=queue)
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


def enqueue_items(run: JudgeRun, items: Iterable[tuple[int, int]]) -> None:
    """Queue these (item id, n outputs) in chunks of the run's size."""
    enqueue_chunks(run, make_chunks(items, config_chunk_size(run.config)))
