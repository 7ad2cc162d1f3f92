"""What a run will ask before it starts: calls, input tokens, most output tokens, cost and time.

The prompts are rendered by the method itself: the run's own code path (engine.judge_items)
is driven with a backend that records each request and sends nothing, on every item up to
SAMPLE_ITEMS (beyond that, on evenly spread items, scaled up, and the estimate says so).
Input tokens come from judges.tokens (the model's tokenizer where one is here, else an
approximation that says so); output tokens are the most the requests allow: each request's
output cap as its provider puts it in the body (judges.providers.output_limit: reasoning and
thinking budgets included, times n), summed over the calls; cost at the judge's prices (its batch prices for a batch
judge); time at the judge's requests- and tokens-per-minute limits.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence

from annotation.models import Item, Study
from judges.backends.base import Backend, JudgeRequest, Result
from judges.backends.errors import PermanentBackendError
from judges.config import COMMON_METHOD_OPTIONS, METHOD_OPTIONS
from judges.plan import JudgePlan, Limits
from judges.services import engine
from judges.services.run_items import item_payload
from judges.tokens import APPROXIMATE, token_counter

SAMPLE_ITEMS = 300


class RecordingBackend(Backend):
    """Records every request and answers none (the methods then stop after their first round)."""

    name = "estimate-recorder"

    def __init__(self) -> None:
        self.requests: list[JudgeRequest] = []

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        self.requests += requests
        return [PermanentBackendError("estimate: nothing is sent")] * len(requests)


def _sample(ids: list[int], n: int) -> list[int]:
    if len(ids) <= n:
        return ids
    step = len(ids) / n
    return [ids[int(i * step)] for i in range(n)]


def _pending(config: Mapping[str, Any] | JudgePlan, rubric: Mapping[str, Any], criteria: Sequence[str],
             items: Sequence[Item]) -> tuple[list[dict], dict]:
    plan = JudgePlan.of(config, rubric)
    payloads, pending = [], {}
    for item in items:
        outputs = sorted(item.outputs.all(), key=lambda o: o.position)
        payloads.append(item_payload(item, outputs))
        for idx, out in enumerate(outputs):
            slots = plan.output_slots(out.content, out.kind) if plan.per_step else list(criteria)
            if slots:
                pending[(item.external_id, idx)] = slots
        slots = plan.item_slots(len(outputs), item.external_id)
        if slots:
            pending[(item.external_id, None)] = slots
    return payloads, pending


def _requests(plan: JudgePlan, items: Sequence[Item]) -> list[JudgeRequest]:
    recorder = RecordingBackend()
    payloads, pending = _pending(plan, plan.rubric, plan.criteria, items)
    if pending:
        asyncio.run(engine.judge_items(plan, plan.rubric, payloads, pending, None, backend_for=lambda c: recorder))
    return recorder.requests


def _one_judge(plan: JudgePlan, items: Sequence[Item], scale: float) -> dict[str, Any]:
    requests = _requests(plan, items)
    counter = token_counter(plan.config)
    tokens_in = sum(counter.count(r.messages, r.prompt) for r in requests)
    tokens_out = sum(plan.output_limit(r) for r in requests)
    price = plan.pricing
    return {"calls": round(len(requests) * scale), "input_tokens": round(tokens_in * scale),
            "max_output_tokens": round(tokens_out * scale),
            "max_cost_usd": price.cost(tokens_in, tokens_out) * scale,
            "input_cost_usd": price.cost(tokens_in, 0) * scale,
            "tokens_exact": counter.exact, "tokenizer": counter.source}


def pending_max_cost(config: Mapping[str, Any] | JudgePlan, rubric: Mapping[str, Any], payloads: Sequence[dict],
                     pending: Mapping) -> float | None:
    """The most the calls for these pending slots may cost, from their own prompts (approximate input
    tokens) and output caps: what a chunk reserves under a cap beside the estimate's average, so a
    chunk of long items cannot outspend its reservation. None where the calls are not known before
    (an ensemble's members, escalation's experts)."""
    plan = JudgePlan.of(config, rubric)
    if plan.is_ensemble or plan.method == "escalation":
        return None
    recorder = RecordingBackend()
    asyncio.run(engine.judge_items(plan, rubric, payloads, pending, None, backend_for=lambda c: recorder))
    tokens_in = sum(APPROXIMATE.count(r.messages, r.prompt) for r in recorder.requests)
    return plan.pricing.cost(tokens_in, sum(plan.output_limit(r) for r in recorder.requests))


def time_at_limits(calls: int, tokens: int, mo: Mapping[str, Any]) -> float | None:
    """Seconds the run needs at least under its per-minute limits; None without limits."""
    return Limits(chunk_size=0, rpm=mo.get("rpm") or None, tpm=mo.get("tpm") or None,
                  max_cost_usd=None).time_s(calls, tokens)


def run_estimate(*, study: Study, config: Mapping[str, Any], plan: JudgePlan | None = None) -> dict[str, Any]:
    """The estimate for `config` (a run's snapshot, judges.services.runs.judge_config_snapshot) on `study`;
    `plan`: its plan when the caller has built it."""
    rubric = study.rubric
    plan = plan or JudgePlan.of(config, rubric)
    ids = list(Item.objects.filter(study=study, is_attention_check=False, outputs__isnull=False)
               .distinct().order_by("id").values_list("id", flat=True))
    chosen = _sample(ids, SAMPLE_ITEMS)
    items = list(Item.objects.filter(pk__in=chosen).prefetch_related("outputs").order_by("id"))
    scale = len(ids) / len(items) if items else 0.0
    notes: list[str] = []
    mo = plan.options
    if plan.is_ensemble:
        parts = [_one_judge(m, items, scale) for m in plan.members]
        notes.append("a weighted ensemble: the sum of its members' estimates")
    elif plan.method == "escalation":
        mo_label = {k: v for k, v in mo.items() if k in COMMON_METHOD_OPTIONS or k in METHOD_OPTIONS["label"]}
        first = JudgePlan.of({**config, "method": "label", "method_options": mo_label}, rubric)
        parts = [_one_judge(first, items, scale)]
        notes.append("escalation: the first (cheap) judge on every output; the experts ask more on the "
                     "escalated ones only, which cannot be known before the run")
    else:
        parts = [_one_judge(plan, items, scale)]
    est: dict[str, Any] = {k: sum(p[k] for p in parts) for k in
                           ("calls", "input_tokens", "max_output_tokens", "max_cost_usd", "input_cost_usd")}
    est["tokens_exact"] = all(p["tokens_exact"] for p in parts)
    est["tokenizer"] = "; ".join(dict.fromkeys(p["tokenizer"] for p in parts))
    est["items"] = len(ids)
    est["sampled_items"] = len(items)
    if len(items) < len(ids):
        notes.append(f"prompts rendered for {len(items)} of {len(ids)} items, evenly spread, and scaled up")
    if mo.get("batch"):
        notes.append("at batch prices; a batch ends within the provider's 24-hour window")
    est["time_s"] = plan.limits.time_s(est["calls"], est["input_tokens"] + est["max_output_tokens"])
    if est["time_s"] is None:
        notes.append("no rpm/tpm limit set: the time depends on the server alone")
    est["notes"] = notes
    return est


def estimate_lines(est: Mapping[str, Any]) -> list[str]:
    """The estimate as short lines of text (run_judge --dry-run, the run form)."""
    exact = "counted with " if est["tokens_exact"] else ""
    lines = [f"calls: {est['calls']}",
             f"input tokens: {est['input_tokens']} ({exact}{est['tokenizer']})",
             f"output tokens: at most {est['max_output_tokens']}",
             f"cost: at most ${est['max_cost_usd']:.4f} (input ${est['input_cost_usd']:.4f})"]
    if est.get("time_s") is not None:
        lines.append(f"time at the judge's limits: at least {est['time_s']:.0f} s")
    return lines + [f"note: {n}" for n in est.get("notes") or []]
