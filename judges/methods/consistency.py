"""Self-consistency: n sampled judgements per (output, criterion), aggregated.

Scores: mean (and median) with the spread (population standard deviation); labels:
the majority with its agreement share. No sample parsed -> unparsed; a tie between
majority labels -> "inconsistent" (never an arbitrary pick).
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Mapping, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse
from judges.backends.errors import BackendError
from judges.parsing import OK, UNPARSED
from judges.prompts import build_criterion
from judges.prompts.base import LABEL_KINDS
from judges.methods.base import CriterionResult, MethodSettings, Target, call, request_for, schema
from judges.structured import reader
from judges.methods.direct import criterion_schema, parse_for_prompt, selected


def aggregate(values: Sequence[Any], numeric: bool) -> tuple[Any, str, dict[str, Any]]:
    if not values:
        return None, UNPARSED, {"n_parsed": 0}
    if numeric:
        mean = statistics.fmean(values)
        return mean, OK, {"n_parsed": len(values), "median": statistics.median(values),
                          "spread": statistics.pstdev(values), "samples": list(values)}
    counts = Counter(values).most_common()
    top = counts[0][1]
    winners = [v for v, c in counts if c == top]
    sig = {"n_parsed": len(values), "agreement": top / len(values), "counts": dict(counts)}
    if len(winners) > 1:
        return None, "inconsistent", sig
    return winners[0], OK, sig


async def self_consistency(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target],
                           s: MethodSettings, samples: int = 5, temperature: float = 0.7,
                           separate_requests: bool = False) -> list[CriterionResult]:
    """`separate_requests=True` sends n requests with seeds seed..seed+n-1 (servers without `n`, e.g. Ollama)."""
    crits = selected(rubric, s)
    jobs = [(t, c, build_criterion(rubric, c["key"], t.item, t.output, s.overrides, s.output_format))
            for c in crits for t in targets]
    base_seed = s.seed if s.seed is not None else 0
    answers = [schema(s, lambda p=p, c=c: criterion_schema(p, c)) for _, c, p in jobs]
    if separate_requests:
        reqs: list[JudgeRequest] = [request_for(p, s, temperature=temperature, seed=base_seed + k, json_schema=a)
                                    for (_, _, p), a in zip(jobs, answers) for k in range(samples)]
    else:
        reqs = [request_for(p, s, temperature=temperature, n=samples, seed=base_seed, json_schema=a)
                for (_, _, p), a in zip(jobs, answers)]
    results = await call(backend, reqs, s)
    per = samples if separate_requests else 1
    out = []
    for n, (t, c, p) in enumerate(jobs):
        rs = results[n * per:(n + 1) * per]
        raws, tin, tout, errors = [], 0, 0, []
        for r in rs:
            if isinstance(r, BackendError):
                errors.append(f"{type(r).__name__}: {r}")
            elif isinstance(r, JudgeResponse):
                raws += r.texts
                if not r.cached:
                    tin, tout = tin + r.input_tokens, tout + r.output_tokens
        parsed = [reader(answers[n], lambda text: parse_for_prompt(p, c, text))(x) for x in raws]
        values = [pr.value for pr in parsed if pr.status == OK]
        value, status, sig = aggregate(values, c.get("kind") not in LABEL_KINDS)
        if not raws and errors:
            status = "error"
        doubt = {k: sig[k] for k in ("spread", "agreement") if k in sig}
        doubt["n_parsed"] = sig["n_parsed"]
        out.append(CriterionResult(item_id=t.item_id, output=t.output, criterion=c["key"], value=value,
                                   status=status, raw=raws, input_tokens=tin, output_tokens=tout,
                                   cost_usd=s.pricing.cost(tin, tout), doubt=doubt,
                                   detail={k: v for k, v in sig.items() if k not in doubt} |
                                   ({"errors": errors} if errors else {})))
    return out
