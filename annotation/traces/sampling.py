"""The sampling rule that picks which OTLP traces reach the raters, stored per study
(`Study.trace_sampling`). Pure: no Django.

Stored as `{"rate": 0.2, "flags": ["unacceptable"]}`: every trace carrying an evaluation label in
`flags` (a judge or evaluator marked it) is kept, and of the rest the share `rate`, chosen from the
trace id (the same trace is always chosen the same way). `{}` is no rule set: every trace is kept.
Each kept trace records its inclusion probability and weight (1 / probability) in its item's
metadata.sampling, and the items download carries them (`trace_sampling`, `inclusion_probability`),
so that estimates over the traffic weight each rated trace back (a Horvitz-Thompson estimate)
whatever rule was in force when it came.

    rule_clean({"rate": "0.2"}) -> {"rate": 0.2, "flags": ["unacceptable"]}   # SamplingRuleError
    SamplingRule.stored(study.trace_sampling).decide(trace_id, labels) -> metadata.sampling | None
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_FLAGS = ("unacceptable",)
MAX_FLAGS = 20
MAX_FLAG_CHARS = 64


class SamplingRuleError(ValueError):
    """A rule that cannot be stored; the message names the field (trace_sampling.rate ...)."""


@dataclass(frozen=True)
class SamplingRule:
    rate: float = 1.0  # share of the unflagged traces kept
    flags: tuple[str, ...] = DEFAULT_FLAGS  # evaluation labels that always keep a trace (lower case)

    @classmethod
    def stored(cls, rule: dict) -> SamplingRule:
        """The rule of a study's cleaned `trace_sampling` ({} keeps every trace)."""
        return cls(rate=rule.get("rate", 1.0), flags=tuple(rule.get("flags", DEFAULT_FLAGS)))

    def decide(self, trace_id: str, labels: set[str]) -> dict | None:
        """metadata.sampling for a kept trace, None for one left out."""
        hit = sorted(labels & set(self.flags))
        if hit:
            return {"rule": "flagged", "labels": hit, "probability": 1.0, "weight": 1.0}
        # The low 8 bytes of a random trace id are uniform: the same test as OpenTelemetry's
        # TraceIdRatioBased sampler, so a share chosen here is reproducible from the id alone.
        if self.rate <= 0 or int(trace_id[16:], 16) >= self.rate * 2**64:
            return None
        return {"rule": "random", "rate": self.rate, "probability": self.rate, "weight": round(1 / self.rate, 6)}


def _rate(raw) -> float:
    value = raw
    if isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        raise SamplingRuleError(f"trace_sampling.rate: a share of the unflagged traces from 0 to 1 (0.2 keeps one in "
                                f"five), not {raw!r}")
    return float(value)


def flags_clean(value, field: str = "trace_sampling.flags") -> list[str]:
    """Evaluation labels as a rule compares them: stripped, lower case, no repeats, in the given order."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(f, str) for f in value):
        raise SamplingRuleError(f"{field}: a list of evaluation labels, e.g. [\"unacceptable\", \"fail\"]")
    flags = list(dict.fromkeys(f.strip().lower() for f in value if f.strip()))
    if len(flags) > MAX_FLAGS:
        raise SamplingRuleError(f"{field}: at most {MAX_FLAGS} labels")
    if long := next((f for f in flags if len(f) > MAX_FLAG_CHARS), None):
        raise SamplingRuleError(f"{field}: a label has at most {MAX_FLAG_CHARS} characters ({long[:20]!r}…)")
    return flags


def rule_clean(raw) -> dict:
    """The stored form of a study's rule: {} (none: every trace kept) or {"rate", "flags"}."""
    if raw in (None, "", {}):
        return {}
    if not isinstance(raw, dict):
        raise SamplingRuleError('trace_sampling: an object, e.g. {"rate": 0.2, "flags": ["unacceptable"]}, or empty')
    unknown = sorted(set(raw) - {"rate", "flags"})
    if unknown:
        raise SamplingRuleError(f"trace_sampling.{unknown[0]}: not part of a sampling rule (rate, flags)")
    return {"rate": _rate(raw.get("rate", 1.0)),
            "flags": flags_clean(raw["flags"]) if "flags" in raw else list(DEFAULT_FLAGS)}


def rule_for_request(stored: dict, sample: str | None, flag: str | None) -> SamplingRule:
    """The rule for one OTLP request: the study's; for a study without one, the endpoint's query
    (`?sample=0.2&flag=unacceptable`, as before rules were stored). A query that differs from the
    study's rule is refused rather than followed: one study, one rule at a time, as its owner set it."""
    if sample is None and flag is None:
        return SamplingRule.stored(stored)
    asked = {"rate": _rate(sample if sample is not None else 1.0),
             "flags": flags_clean(flag, "flag") if flag is not None else list(DEFAULT_FLAGS)}
    if not stored:
        return SamplingRule.stored(asked)
    if asked != stored:
        raise SamplingRuleError(
            f"sample: this study's sampling rule is set on the study (rate {stored['rate']:g}, flags "
            f"{', '.join(stored['flags']) or 'none'}); leave sample and flag out of the address, or change the "
            "study's rule (trace_sampling)")
    return SamplingRule.stored(stored)
