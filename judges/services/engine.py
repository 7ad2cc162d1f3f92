"""Adapter from a judge configuration (a plain dict) to the pure method layer. No Django.

`judge_items` builds the backend and settings from a run's config snapshot, calls the
configured method on plain item dicts and returns one `Judged` per slot: a slot is an
(output, criterion) pair, or an item-level slot of the comparative methods: for pairwise
(item, "pair:<criterion>:<a>-<b>"), for ranking (item, "rank:<criterion>"), for best_worst
(item, "bw:<criterion>:<p1>-<p2>-...") per tuple of its balanced design.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from judges import methods as M
from judges.backends import get_backend
from judges.backends import errors as backend_errors
from judges.backends.base import Backend
from judges.cache import CacheStore
from judges.config import LABEL_METHODS
from judges.methods.best_worst import shown_of_slot
from judges.methods.trajectory import judge_trajectories
from judges.plan import BATCH_DISCOUNT, SLOT_MAX, TRAJECTORY_METHODS, JudgePlan, pair_slot  # noqa: F401 -- re-exported
from judges.providers import settings_from_judge

STATUS_MAP = {"ok": "scored", "refusal": "refusal", "error": "error", "truncated": "truncated"}  # else: unparsed
RETRYABLE_NAMES = {name for name, obj in vars(backend_errors).items()
                   if isinstance(obj, type) and issubclass(obj, backend_errors.BackendError) and obj.retryable}


@dataclass
class Judged:
    item_id: str
    output: int | None  # index into the item's outputs; None for item-level slots
    criterion: str
    value: Any
    status: str  # scored | unparsed | refusal | error
    raw: list[str] = field(default_factory=list)
    reasoning: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    doubt: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
    retryable: bool = False  # failed on an error that trying again may cure

    @property
    def raw_text(self) -> str:
        return "\n\n-----\n\n".join(r for r in self.raw if r)


# ------------------------------------------------------------------------------------- slots
# The plan (judges.plan.JudgePlan) answers these; the functions stay for callers holding a dict.

def label_key(config: Mapping[str, Any], rubric: Mapping[str, Any]) -> str:
    return JudgePlan.of(config, rubric).label_key


def output_criteria(config: Mapping[str, Any], rubric: Mapping[str, Any]) -> list[str]:
    """Criterion keys the judge scores per output ([] for the comparative methods: item-level slots)."""
    return list(JudgePlan.of(config, rubric).criteria)


def pair_key(config: Mapping[str, Any]) -> str:
    return (config.get("method_options") or {}).get("key") or "overall"


def comparative_key(config: Mapping[str, Any], rubric: Mapping[str, Any]) -> str:
    return JudgePlan.of(config, rubric).compare_key


def tuple_size(config: Mapping[str, Any], rubric: Mapping[str, Any], key: str) -> int:
    return JudgePlan.of(config, rubric).tuple_size(key)


def item_slots(config: Mapping[str, Any], n_outputs: int, rubric: Mapping[str, Any] | None = None,
               item_key: str = "") -> list[str]:
    """Item-level slot names of an item with n outputs (the comparative methods)."""
    if rubric is None and config["method"] in ("ranking", "best_worst") and n_outputs >= 2:
        raise ValueError(f"the {config['method']} method's slots depend on the rubric")
    return JudgePlan.of(config, rubric or {}).item_slots(n_outputs, item_key)


def numeric_score(criterion: Mapping[str, Any] | None, value: Any) -> float | None:
    """The number statistics use: the value of scored kinds; 1/0 for binary (first choice = 1)."""
    if criterion is None or value is None:
        return None
    kind = criterion.get("kind")
    if kind == "binary":
        choices = [str(c["value"]) for c in criterion.get("choices") or []]
        return (1.0 if str(value) == choices[0] else 0.0) if choices and str(value) in choices else None
    if kind in ("likert", "numeric", "confidence"):
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    return None


# ------------------------------------------------------------------------------------- building

_LOCAL_BACKENDS: dict[tuple, Backend] = {}
_LOCAL_LOCK = threading.Lock()


def build_backend(config: Mapping[str, Any]) -> Backend:
    opts = dict(config.get("backend_options") or {})
    if config["backend"] == "openai":
        settings = vars(settings_from_judge(config))  # the provider's share of the judge; the rest is transport
        transport = {k: v for k, v in opts.items() if k not in settings and k != "reasoning_model"}
        return get_backend("openai_compat", {**settings, **transport,
                                             "max_concurrency": int(config.get("concurrency") or 8)})
    if config["backend"] == "transformers":
        # A loaded model is kept for the life of the worker process: loading costs far more than a chunk.
        key = (config["model"], tuple(sorted((k, repr(v)) for k, v in opts.items())))
        with _LOCAL_LOCK:
            if key not in _LOCAL_BACKENDS:
                _LOCAL_BACKENDS[key] = get_backend("transformers_local", {"model": config["model"], **opts})
            return _LOCAL_BACKENDS[key]
    raise ValueError(f"unknown backend {config['backend']!r}")


def pricing(config: Mapping[str, Any]) -> M.Pricing:
    """USD per 1M tokens; a batch judge's are its batch prices (method_options.batch_discount)."""
    return JudgePlan.of(config, {}).pricing


def settings_for(config: Mapping[str, Any], cache: CacheStore | None,
                 criteria: Sequence[str] | None) -> M.MethodSettings:
    return JudgePlan.of(config, {}).settings(cache, criteria)


def method_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    return JudgePlan.of(config, {}).method_kwargs


def is_ensemble(config: Mapping[str, Any]) -> bool:
    return JudgePlan.of(config, {}).is_ensemble


def ensemble_weights(config: Mapping[str, Any]) -> list[float]:
    """Frozen learnt weights (weights: gold), else the given ones, else 1 each."""
    return JudgePlan.of(config, {}).ensemble_weights


# ------------------------------------------------------------------------------------- running

def _retryable(detail: Mapping[str, Any]) -> bool:
    texts: list[str] = []
    for v in detail.values():
        if isinstance(v, str):
            texts.append(v)
        elif isinstance(v, list):
            texts += [x for x in v if isinstance(x, str)]
    return any(t.split(":", 1)[0].strip() in RETRYABLE_NAMES for t in texts)


def _from_result(r: M.CriterionResult) -> Judged:
    status = STATUS_MAP.get(r.status, "unparsed")
    detail = dict(r.detail)
    if r.status not in STATUS_MAP:
        detail["method_status"] = r.status  # e.g. inconsistent, logprobs_unavailable
    return Judged(item_id=r.item_id, output=r.output, criterion=r.criterion, value=r.value if status == "scored"
                  else None, status=status, raw=list(r.raw), reasoning=r.reasoning or "",
                  tokens_in=r.input_tokens, tokens_out=r.output_tokens, cost_usd=r.cost_usd,
                  doubt=dict(r.doubt), detail=detail, retryable=status == "error" and _retryable(detail))


def _from_pair(r: M.PairResult) -> Judged:
    status = STATUS_MAP.get(r.status, "unparsed")
    detail: dict[str, Any] = {"verdicts": list(r.verdicts)}
    if status != "scored":  # why: each order's reading (the reason a verdict is missing)
        detail["parse"] = list(r.parse)
    if r.status not in STATUS_MAP:
        detail["method_status"] = r.status
    key = r.criterion
    return Judged(item_id=r.item_id, output=None, criterion=pair_slot(key, r.output_a, r.output_b),
                  value=r.value if status == "scored" else None, status=status, raw=list(r.raw),
                  tokens_in=r.input_tokens, tokens_out=r.output_tokens, cost_usd=r.cost_usd,
                  doubt=dict(r.doubt), detail=detail,
                  retryable=status == "error")  # pairwise keeps no error text; its errors are backend errors


async def judge_items(config: Mapping[str, Any] | JudgePlan, rubric: Mapping[str, Any],
                      items: Sequence[Mapping[str, Any]],
                      pending: Mapping[tuple[str, int | None], Iterable[str]],
                      cache: CacheStore | None = None,
                      backend_for: Callable[[Mapping[str, Any]], Backend] | None = None) -> list[Judged]:
    """Judge the pending slots of `items`. `config` is the judge's plan or its configuration;
    `backend_for(config)` builds each backend (default build_backend; `judge_request` passes one that
    records the requests and sends nothing).

    `pending[(item_id, output_index)]` lists the criteria still to score for that output;
    `pending[(item_id, None)]` the item-level slots (pairwise, ranking, best_worst). Outputs with the same pending
    set are judged in one call of the method, so a resumed output asks only for what is missing.
    """
    plan = JudgePlan.of(config, rubric)
    config = plan.config
    backend_for = backend_for or build_backend
    by_id = {str(it["id"]): it for it in items}
    method = plan.method
    stages = None
    members: list[M.Member] = []
    if plan.is_ensemble:
        for m in plan.members:
            members.append(M.Member(backend_for(m.config), M.METHODS[m.method], m.pricing, m.name,
                                    {k: v for k, v in m.method_kwargs.items() if k != "key"},
                                    m.settings(cache, None)))
        backend = backend_for(config)  # closed below like any judge's; the members vote
    elif method == "escalation":
        stages = [M.Stage(backend_for(st.config), st.pricing, st.name) for st in plan.stages]
        backend = stages[0].backend if stages else backend_for(config)
    else:
        backend = backend_for(config)
    out: list[Judged] = []
    try:
        if method == "pairwise":
            key = plan.pair_key
            pairs = []
            for (item_id, idx), slots in pending.items():
                if idx is not None:
                    continue
                for slot in slots:
                    a, b = (int(x) for x in slot.rsplit(":", 1)[1].split("-"))
                    pairs.append((by_id[item_id], a, b))
            if pairs:
                s = plan.settings(cache, None)
                res = await M.pairwise(backend, rubric, pairs, s, key=None if key == "overall" else key)
                out += [_from_pair(r) for r in res]
            return out
        if method in ("ranking", "best_worst"):
            key = plan.compare_key
            s = plan.settings(cache, None)
            asked = [(item_id, slot) for (item_id, idx), slots in pending.items() if idx is None for slot in slots]
            if method == "ranking":
                wanted = [by_id[i] for i in dict.fromkeys(i for i, _ in asked)]
                swap = bool(plan.options.get("swap", True))
                res = await M.ranking(backend, rubric, wanted, s, key=None if key == "overall" else key, swap=swap)
            else:
                tuples = [(by_id[i], shown_of_slot(slot)) for i, slot in asked]
                res = await M.best_worst(backend, rubric, tuples, s, key=None if key == "overall" else key)
            out += [_from_result(r) for r in res]
            return out
        groups: dict[tuple[str, ...], list[M.Target]] = {}
        trajectories: list[tuple[M.Target, list[str]]] = []  # sent as chat messages, per step where asked
        for (item_id, idx), crits in pending.items():
            crits = tuple(sorted(crits))
            if idx is None or not crits:
                continue
            target = M.Target(by_id[item_id], idx)
            if method in TRAJECTORY_METHODS and by_id[item_id]["outputs"][idx].get("kind") == "trajectory":
                trajectories.append((target, list(crits)))
            else:
                groups.setdefault(crits, []).append(target)
        if trajectories:
            res = await judge_trajectories(backend, rubric, trajectories, plan.settings(cache, None), plan.step_mode)
            out += [_from_result(r) for r in res]
        fn = M.METHODS[method]
        kwargs = plan.method_kwargs
        for crits, targets in groups.items():
            s = plan.settings(cache, crits)
            if method in LABEL_METHODS:
                kwargs = {**kwargs, "key": crits[0]}
            if members:
                res = await M.weighted_ensemble(members, rubric, targets, s, weights=plan.ensemble_weights,
                                                key=crits[0])
            else:
                first = stages if method == "escalation" else backend
                res = await fn(first, rubric, targets, s, **kwargs)
            out += [_from_result(r) for r in res]
        return out
    finally:
        # HTTP clients close per call; local models stay loaded (see build_backend).
        if plan.backend != "transformers":
            await backend.aclose()
        for m, mp in zip(members, plan.members):
            if mp.backend != "transformers":
                await m.backend.aclose()
