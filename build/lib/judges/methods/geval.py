"""G-Eval: the probability-weighted score from the next-token distribution over score tokens.

Requests ask for logprobs (top 20) and a one-token answer (remote servers) or a forward
pass (local models, mode="logprob"). Scales whose scores are not single tokens (e.g. "10"
split into "1","0" by some tokenizers) cannot be read this way: such tokens simply never
appear, and the score is renormalised over those that do, with `score_mass` in the doubt
signals showing how much probability the score tokens held.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.backends.base import Backend, JudgeResponse
from judges.parsing import LOGPROBS_UNAVAILABLE, ParseResult, expected_score
from judges.prompts import build_criterion
from judges.prompts.base import LABEL_KINDS, bounds
from judges.methods.base import CriterionResult, MethodSettings, Target, call, error_parse, from_parse, request_for
from judges.methods.direct import selected


async def geval(backend: Backend, rubric: Mapping[str, Any], targets: Sequence[Target], s: MethodSettings,
                top_logprobs: int = 20) -> list[CriterionResult]:
    crits = [c for c in selected(rubric, s) if c.get("kind") not in LABEL_KINDS]
    jobs = []
    for c in crits:
        lo, hi = bounds(c)
        allowed = tuple(str(v) for v in range(lo, hi + 1))
        for t in targets:
            p = build_criterion(rubric, c["key"], t.item, t.output, s.overrides, "first_line")
            jobs.append((t, c, allowed, request_for(p, s, mode="logprob", logprobs=True, top_logprobs=top_logprobs,
                                                    allowed_tokens=allowed, max_tokens=1, temperature=0.0)))
    results = await call(backend, [j[3] for j in jobs], s)
    out = []
    for (t, c, allowed, _), r in zip(jobs, results):
        if isinstance(r, JudgeResponse):
            lp = r.logprobs[0] if r.logprobs else None
            chosen = r.chosen_tokens[0] if r.chosen_tokens else None
            parsed = expected_score(lp, allowed, chosen, raw=r.text)
        else:
            parsed = error_parse(r)
        res = from_parse(t, c["key"], parsed, r, s.pricing)
        res.doubt.pop("truncated", None)  # one token is all a logprob request asks for
        if parsed.extra:
            res.doubt.update({k: parsed.extra[k] for k in ("top_prob", "score_mass") if k in parsed.extra})
            res.detail["distribution"] = parsed.extra.get("distribution")
        out.append(res)
    return out


__all__ = ["geval", "LOGPROBS_UNAVAILABLE", "ParseResult"]
