"""G-Eval: the probability-weighted score from the next-token distribution over score tokens."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from judges.parsing.common import LOGPROBS_UNAVAILABLE, OK, UNPARSED, ParseResult

def expected_score(positions: Sequence[Mapping[str, float]] | None, allowed: Sequence[int | str],
                   chosen: Sequence[str] | None = None, raw: str = "") -> ParseResult:
    """Probability-weighted score (G-Eval) renormalised over the allowed score tokens.

    Uses the first position whose chosen token is a score token (the score may follow a
    space or a bold marker), else the first position. Tokens equal after stripping
    whitespace (" 4" and "4") are merged. `extra` carries doubt signals: top_prob (largest
    renormalised probability) and score_mass (probability on score tokens before
    renormalising). No logprobs -> status "logprobs_unavailable", never a silent fallback.
    """
    if not positions:
        return ParseResult(None, LOGPROBS_UNAVAILABLE, raw, detail="backend returned no logprobs")
    allowed_s = {str(a) for a in allowed}
    idx = 0
    if chosen:
        for i, tok in enumerate(chosen[: len(positions)]):
            if tok.strip() in allowed_s:
                idx = i
                break
    probs: dict[str, float] = {}
    for tok, lp in positions[idx].items():
        t = tok.strip()
        if t in allowed_s and lp is not None and math.isfinite(lp):
            probs[t] = probs.get(t, 0.0) + math.exp(lp)
    mass = sum(probs.values())
    if mass <= 0:
        return ParseResult(None, UNPARSED, raw, detail="no score token among the top logprobs",
                           extra={"score_mass": 0.0})
    dist = {t: p / mass for t, p in probs.items()}
    value = sum(float(t) * p for t, p in dist.items())
    return ParseResult(value, OK, raw, detail="logprobs",
                       extra={"distribution": dist, "top_prob": max(dist.values()), "score_mass": mass,
                              "position": idx})
