"""Adapter from a judge configuration (a plain dict) to the pure method layer. No Django.

`judge_items` builds the backend and settings from a run's config snapshot, calls the
configured method on plain item dicts and returns one `Judged` per slot: a slot is an
(output, criterion) pair, or an item-level slot of the comparative methods: for pairwise
(item, "pair:<criterion>:<a>-<b>"), for ranking (item, "rank:<criterion>"), for best_worst
(item, "bw:<criterion>:<p1>-<p2>-...") per tuple of its balanced design.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from judges import methods as M
from judges.backends import get_backend
from judges.backends import errors as backend_errors
from judges.backends.base import Backend
from judges.cache import CacheStore
from judges.config import COMMON_METHOD_OPTIONS, ENSEMBLE_OPTIONS, ITEM_LEVEL_METHODS, LABEL_METHODS
from judges.methods.best_worst import DEFAULT_TUPLE_SIZE, bw_slot, design, shown_of_slot
from judges.methods.ranking import rank_slot
from judges.prompts import check_rubric_overrides
from judges.providers import settings_from_judge
from judges.prompts.base import LABEL_KINDS, judgeable

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

def label_key(config: Mapping[str, Any], rubric: Mapping[str, Any]) -> str:
    key = (config.get("method_options") or {}).get("key")
    if key:
        return key
    wanted = config.get("criteria") or []
    labels = [c["key"] for c in judgeable(rubric) if c.get("kind") in LABEL_KINDS]
    for k in wanted:
        if k in labels:
            return k
    if not labels:
        raise ValueError(f"method {config['method']} needs a choice/binary criterion; rubric has none")
    return labels[0]


def output_criteria(config: Mapping[str, Any], rubric: Mapping[str, Any]) -> list[str]:
    """Criterion keys the judge scores per output ([] for the comparative methods: item-level slots)."""
    check_rubric_overrides(rubric, config.get("prompt_overrides"))  # before a run starts, not in its chunks
    method = config["method"]
    if method == "pairwise":
        return []
    if method in ITEM_LEVEL_METHODS:
        comparative_key(config, rubric)  # a wrong key stops the run before it starts
        return []
    if method in LABEL_METHODS:
        return [label_key(config, rubric)]
    crits = judgeable(rubric)
    if method == "geval":
        crits = [c for c in crits if c.get("kind") not in LABEL_KINDS]
    keys = [c["key"] for c in crits]
    wanted = config.get("criteria") or []
    if wanted:
        unknown = sorted(set(wanted) - set(keys))
        if unknown:
            raise ValueError(f"criteria {unknown} are not judgeable by {method} in this rubric")
        keys = [k for k in keys if k in wanted]
    if not keys:
        raise ValueError(f"nothing in this rubric for method {method} to judge")
    return keys


def pair_key(config: Mapping[str, Any]) -> str:
    return (config.get("method_options") or {}).get("key") or "overall"


def pair_slot(key: str, a: int, b: int) -> str:
    return f"pair:{key}:{a}-{b}"


SLOT_MAX = 80  # JudgeScore.criterion's length


def comparative_key(config: Mapping[str, Any], rubric: Mapping[str, Any]) -> str:
    """What a ranking or best_worst judge compares on: `method_options.key` (a criterion of the
    method's own kind), else the rubric's first criterion of that kind, else "overall"."""
    method = config["method"]
    key = (config.get("method_options") or {}).get("key")
    crits = {c["key"]: c for c in rubric.get("criteria", [])}
    if key:
        if key not in crits:
            raise ValueError(f"method_options.key: the rubric has no criterion {key!r}")
        if crits[key]["kind"] != method:
            raise ValueError(f"method_options.key: {key!r} is a {crits[key]['kind']} question; "
                             f"a {method} judge compares on a {method} criterion")
        return key
    return next((c["key"] for c in crits.values() if c["kind"] == method), "overall")


def tuple_size(config: Mapping[str, Any], rubric: Mapping[str, Any], key: str) -> int:
    given = (config.get("method_options") or {}).get("tuple_size")
    if given:
        return int(given)
    crit = next((c for c in rubric.get("criteria", []) if c["key"] == key), None)
    return int((crit or {}).get("tuple_size") or DEFAULT_TUPLE_SIZE)


def item_slots(config: Mapping[str, Any], n_outputs: int, rubric: Mapping[str, Any] | None = None,
               item_key: str = "") -> list[str]:
    """Item-level slot names of an item with n outputs (the comparative methods). ranking and
    best_worst need the rubric (their criterion); best_worst's tuples depend on `item_key`
    (the item's external id), never their number."""
    method = config["method"]
    if method == "pairwise":
        key = pair_key(config)
        return [pair_slot(key, a, b) for a, b in itertools.combinations(range(n_outputs), 2)]
    if method not in ITEM_LEVEL_METHODS or n_outputs < 2:
        return []
    if rubric is None:
        raise ValueError(f"the {method} method's slots depend on the rubric")
    key = comparative_key(config, rubric)
    if method == "ranking":
        return [rank_slot(key)]
    slots = [bw_slot(key, shown) for shown in design(item_key, n_outputs, tuple_size(config, rubric, key), key)]
    if any(len(s) > SLOT_MAX for s in slots):
        raise ValueError(f"best-worst slot names for {n_outputs} outputs exceed {SLOT_MAX} characters: "
                         f"use a shorter criterion key")
    return slots


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


BATCH_DISCOUNT = 0.5  # OpenAI's Batch API and Anthropic's Message Batches both cost half the normal price


def pricing(config: Mapping[str, Any]) -> M.Pricing:
    """USD per 1M tokens; a batch judge's are its batch prices (method_options.batch_discount)."""
    mo = config.get("method_options") or {}
    share = float(mo.get("batch_discount") or BATCH_DISCOUNT) if mo.get("batch") else 1.0
    return M.Pricing(share * float(config.get("price_in_per_m") or 0.0),
                     share * float(config.get("price_out_per_m") or 0.0))


def settings_for(config: Mapping[str, Any], cache: CacheStore | None,
                 criteria: Sequence[str] | None) -> M.MethodSettings:
    sampling = config.get("sampling") or {}
    mo = config.get("method_options") or {}
    return M.MethodSettings(
        temperature=float(sampling.get("temperature", 0.0)), top_p=float(sampling.get("top_p", 1.0)),
        max_tokens=int(sampling.get("max_tokens", 512)), seed=sampling.get("seed"), pricing=pricing(config),
        overrides=config.get("prompt_overrides") or None, output_format=mo.get("output_format"),
        use_json_schema=bool(mo.get("use_json_schema", False)), structured=bool(config.get("structured_output")),
        cache=cache if mo.get("use_cache", True) else None, criteria=list(criteria) if criteria else None,
    )


def method_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (config.get("method_options") or {}).items()
            if k not in COMMON_METHOD_OPTIONS and k not in ENSEMBLE_OPTIONS and k != "experts"}


def is_ensemble(config: Mapping[str, Any]) -> bool:
    return (config.get("method_options") or {}).get("ensemble") == "weighted"


def ensemble_weights(config: Mapping[str, Any]) -> list[float]:
    """Frozen learnt weights (weights: gold), else the given ones, else 1 each."""
    members = config.get("members") or []
    if config.get("ensemble_weights"):
        return [float(w) for w in config["ensemble_weights"]]
    given = (config.get("method_options") or {}).get("weights")
    return [float(w) for w in given] if isinstance(given, list) else [1.0] * len(members)


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


async def judge_items(config: Mapping[str, Any], rubric: Mapping[str, Any], items: Sequence[Mapping[str, Any]],
                      pending: Mapping[tuple[str, int | None], Iterable[str]],
                      cache: CacheStore | None = None,
                      backend_for: Callable[[Mapping[str, Any]], Backend] | None = None) -> list[Judged]:
    """Judge the pending slots of `items`. `backend_for(config)` builds each backend (default
    build_backend; `judge_request` passes one that records the requests and sends nothing).

    `pending[(item_id, output_index)]` lists the criteria still to score for that output;
    `pending[(item_id, None)]` the item-level slots (pairwise, ranking, best_worst). Outputs with the same pending
    set are judged in one call of the method, so a resumed output asks only for what is missing.
    """
    backend_for = backend_for or build_backend
    by_id = {str(it["id"]): it for it in items}
    method = config["method"]
    stages = None
    members: list[M.Member] = []
    if is_ensemble(config):
        for c in config.get("members") or []:
            members.append(M.Member(backend_for(c), M.METHODS[c["method"]], pricing(c), c.get("name", ""),
                                    {k: v for k, v in method_kwargs(c).items() if k != "key"},
                                    settings_for(c, cache, None)))
        backend = backend_for(config)  # closed below like any judge's; the members vote
    elif method == "escalation":
        stage_cfgs = config.get("stages") or []
        stages = [M.Stage(backend_for(c), pricing(c), c.get("name", "")) for c in stage_cfgs]
        backend = stages[0].backend if stages else backend_for(config)
    else:
        backend = backend_for(config)
    out: list[Judged] = []
    try:
        if method == "pairwise":
            key = pair_key(config)
            pairs = []
            for (item_id, idx), slots in pending.items():
                if idx is not None:
                    continue
                for slot in slots:
                    a, b = (int(x) for x in slot.rsplit(":", 1)[1].split("-"))
                    pairs.append((by_id[item_id], a, b))
            if pairs:
                s = settings_for(config, cache, None)
                res = await M.pairwise(backend, rubric, pairs, s, key=None if key == "overall" else key)
                out += [_from_pair(r) for r in res]
            return out
        if method in ("ranking", "best_worst"):
            key = comparative_key(config, rubric)
            s = settings_for(config, cache, None)
            asked = [(item_id, slot) for (item_id, idx), slots in pending.items() if idx is None for slot in slots]
            if method == "ranking":
                wanted = [by_id[i] for i in dict.fromkeys(i for i, _ in asked)]
                swap = bool((config.get("method_options") or {}).get("swap", True))
                res = await M.ranking(backend, rubric, wanted, s, key=None if key == "overall" else key, swap=swap)
            else:
                tuples = [(by_id[i], shown_of_slot(slot)) for i, slot in asked]
                res = await M.best_worst(backend, rubric, tuples, s, key=None if key == "overall" else key)
            out += [_from_result(r) for r in res]
            return out
        groups: dict[tuple[str, ...], list[M.Target]] = {}
        for (item_id, idx), crits in pending.items():
            crits = tuple(sorted(crits))
            if idx is not None and crits:
                groups.setdefault(crits, []).append(M.Target(by_id[item_id], idx))
        fn = M.METHODS[method]
        kwargs = method_kwargs(config)
        for crits, targets in groups.items():
            s = settings_for(config, cache, crits)
            if method in LABEL_METHODS:
                kwargs = {**kwargs, "key": crits[0]}
            if members:
                res = await M.weighted_ensemble(members, rubric, targets, s, weights=ensemble_weights(config),
                                                key=crits[0])
            else:
                first = stages if method == "escalation" else backend
                res = await fn(first, rubric, targets, s, **kwargs)
            out += [_from_result(r) for r in res]
        return out
    finally:
        # HTTP clients close per call; local models stay loaded (see build_backend).
        if config["backend"] != "transformers":
            await backend.aclose()
        for m, c in zip(members, config.get("members") or []):
            if c["backend"] != "transformers":
                await m.backend.aclose()
