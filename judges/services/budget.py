"""A run's money cap and its rate limits.

The cap: before a chunk asks the model it reserves the most it can cost (the larger of its slots x
the estimate's worst case per slot and its own requests' worst case: estimate.pending_max_cost). The reservation locks the run row, then adds what is spent
(the run's live counters; a batch run's answered requests) and what other chunks have reserved: the row lock
orders concurrent chunks, and the sum is read after the lock, so it sees every chunk that
finished before. A chunk that finds no room pauses the run (saying why) and asks nothing. A
chunk writes its scores and gives its reservation back in one transaction under the same lock.
Raising the cap resumes the run: the items with unscored slots are enqueued again. A batch run
reserves when it submits a batch and gives it back when the results are read.
"""

from __future__ import annotations

from typing import Any, Mapping

from django.conf import settings
from django.db import transaction
from django.db.models import F

from judges.models import JudgeBatchRequest, JudgeRun
from judges.services import engine
from judges.services.run_items import enqueue_items, missing_item_ids


class BudgetError(ValueError):
    pass


def slot_max_cost(run: JudgeRun) -> float:
    """The worst case of one slot, from the run's estimate (0 without one)."""
    est = run.estimate or {}
    return float(est.get("max_cost_usd") or 0.0) / run.n_expected if run.n_expected else 0.0


def cost_spent(run: JudgeRun, *, batch: bool) -> float:
    """What the run has paid for; `run` read under its row lock (its live counters then include
    every chunk that finished before)."""
    if batch:
        return batch_cost_spent(run.pk)
    return float(run.cost_usd)


def batch_cost_spent(run_id: int) -> float:
    """What the run's answered batch requests cost, at its batch prices."""
    run = JudgeRun.objects.only("config").get(pk=run_id)
    price = engine.pricing(run.config)
    tokens = JudgeBatchRequest.objects.filter(run_id=run_id, status=JudgeBatchRequest.Status.SUCCEEDED).values_list(
        "response__input_tokens", "response__output_tokens")
    return sum(price.cost(int(i or 0), int(o or 0)) for i, o in tokens)


def cost_reserve(*, run_id: int, amount: float, batch: bool = False) -> tuple[bool, str]:
    """Take `amount` USD of the run's budget: (True, "") or (False, why not). Call inside no transaction."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().only("cost_cap_usd", "cost_reserved_usd", "cost_usd").get(pk=run_id)
        if run.cost_cap_usd is None:
            return True, ""
        spent = cost_spent(run, batch=batch)
        if spent + run.cost_reserved_usd + amount > run.cost_cap_usd * (1 + 1e-9):
            return False, (f"paused before crossing its cap of ${run.cost_cap_usd:.4f}: spent ${spent:.4f}, "
                           f"${run.cost_reserved_usd:.4f} reserved by work under way, and the next "
                           f"{'batch' if batch else 'chunk'} may cost up to ${amount:.4f}. Raise the cap to resume.")
        JudgeRun.objects.filter(pk=run_id).update(cost_reserved_usd=F("cost_reserved_usd") + amount)
        return True, ""


def cost_release(*, run_id: int, amount: float) -> None:
    """Give a reservation back; inside the transaction that writes what it paid for."""
    if amount:
        JudgeRun.objects.select_for_update().filter(pk=run_id).values_list("pk").first()
        JudgeRun.objects.filter(pk=run_id).update(cost_reserved_usd=F("cost_reserved_usd") - amount)


def judge_run_pause(*, run_id: int, reason: str) -> bool:
    """Pause an active run (its queued chunks then do nothing); False if it was not active."""
    return bool(JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE).update(
        status=JudgeRun.Status.PAUSED, pause_reason=reason[:2000]))


def judge_run_set_cap(*, run: JudgeRun, max_cost_usd: float | None) -> JudgeRun:
    """Set (raise, lower or remove) the run's cap; a paused run resumes, and pauses again at once if
    there is still no room."""
    if max_cost_usd is not None and max_cost_usd <= 0:
        raise BudgetError("the cap must be a positive amount of USD (or none)")
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        run.cost_cap_usd = max_cost_usd
        fields = ["cost_cap_usd"]
        if run.status == JudgeRun.Status.PAUSED:
            # Nothing of the run works while it is paused: reservations left by killed workers go here.
            run.cost_reserved_usd = batch_reserved(run)
            run.status = JudgeRun.Status.RUNNING if run.started_at else JudgeRun.Status.QUEUED
            run.pause_reason = ""
            run.attempt += 1
            fields += ["cost_reserved_usd", "status", "pause_reason", "attempt"]
        run.save(update_fields=fields)
        if "status" in fields:
            missing = missing_item_ids(run)
            if missing:
                enqueue_items(run, missing)
    return run


def batch_reserved(run: JudgeRun) -> float:
    """What the run's batches still out at the provider may cost."""
    return float(sum((b.counts or {}).get("reserved_usd", 0.0) for b in run.batches.filter(ended=False)))


def rate_limiter(config: Mapping[str, Any]) -> Any:
    """The judge's shared limiter, or None without rpm/tpm (or for a local model)."""
    mo = config.get("method_options") or {}
    if config.get("backend") != "openai" or not (mo.get("rpm") or mo.get("tpm")):
        return None
    from judges.ratelimit import SharedRateLimiter

    return SharedRateLimiter(config["name"], redis_url=settings.REDIS_URL, rpm=mo.get("rpm"), tpm=mo.get("tpm"))


def count_rate_limited(*, run_id: int, n: int) -> None:
    if n:
        JudgeRun.objects.filter(pk=run_id).update(n_rate_limited=F("n_rate_limited") + n)
