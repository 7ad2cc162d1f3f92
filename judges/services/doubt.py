"""Judges and humans in one loop: find the outputs judges are unsure about and send their items
to a human study.

Doubt signals, per (output, criterion) of the chosen runs:
- low_confidence: G-Eval's largest renormalised score-token probability below `min_top_prob`;
- swap_disagreement: the pairwise verdict flipped when the two responses swapped places (or a
  ranking moved when asked again in the reverse order);
- inconsistent: self-consistency samples spread (std > `max_spread`) or agreed on a label less
  than `min_agreement` of the time;
- escalated_disagreement: in escalation, the small judge and an expert disagreed;
- judge_failed: the judge's answer was unparsed, a refusal or an error;
- judges_disagree: two runs scored the same slot `min_range` or more apart, or gave different labels.

How items reach humans: the assignment engine serves a study's items to its raters; it
has no priorities. So the simplest thing that works with it unchanged is to copy the
doubtful items (context, outputs, metadata, gold) into a human study the admin picks, with
the same rubric, through the ordinary all-or-nothing item import. The copy keeps the item
id and records where it came from and why in its metadata (`concord_doubt`), which
annotators never see. Items already in the target are skipped, so sending twice adds nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

SIGNALS = ("low_confidence", "swap_disagreement", "inconsistent", "escalated_disagreement", "judge_failed",
           "judges_disagree")


@dataclass(frozen=True)
class Thresholds:
    min_top_prob: float = 0.6
    max_spread: float = 1.0
    min_agreement: float = 0.6
    min_range: float = 2.0


def slot_signals(row: Mapping[str, Any], t: Thresholds) -> set[str]:
    """Signals one judge's score carries by itself."""
    found: set[str] = set()
    doubt = row.get("doubt") or {}
    if row.get("status") != "scored":
        found.add("judge_failed")
    top = doubt.get("top_prob")
    if isinstance(top, (int, float)) and top < t.min_top_prob:
        found.add("low_confidence")
    if doubt.get("swap_disagreement"):
        found.add("swap_disagreement")
    spread = doubt.get("spread")
    agreement = doubt.get("agreement")
    if (isinstance(spread, (int, float)) and spread > t.max_spread) or (
            isinstance(agreement, (int, float)) and agreement < t.min_agreement):
        found.add("inconsistent")
    if doubt.get("small_expert_disagree"):
        found.add("escalated_disagreement")
    return found


def doubtful_items(rows: Iterable[Mapping[str, Any]], t: Thresholds = Thresholds(),
                   signals: Iterable[str] = SIGNALS) -> dict[Any, dict[str, Any]]:
    """item -> {"reasons": sorted signal names, "slots": [(output, criterion, signal), ...]}.

    `rows` are plain dicts: item, output, criterion, run, status, value, score, doubt.
    """
    wanted = set(signals)
    out: dict[Any, dict[str, Any]] = {}

    def flag(item: Any, output: Any, criterion: str, signal: str) -> None:
        if signal in wanted:
            entry = out.setdefault(item, {"reasons": set(), "slots": []})
            entry["reasons"].add(signal)
            entry["slots"].append((output, criterion, signal))

    by_slot: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        for s in sorted(slot_signals(r, t)):
            flag(r["item"], r.get("output"), r["criterion"], s)
        if r.get("status") == "scored":
            by_slot.setdefault((r["item"], r.get("output"), r["criterion"]), []).append(r)
    for (item, output, criterion), scored in by_slot.items():
        if len({r["run"] for r in scored}) < 2:
            continue
        values = [r["value"] for r in scored]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            disagree = max(values) - min(values) >= t.min_range
        else:  # labels: any two different answers
            disagree = len({json.dumps(v, sort_keys=True) for v in values}) > 1
        if disagree:
            flag(item, output, criterion, "judges_disagree")
    for entry in out.values():
        entry["reasons"] = sorted(entry["reasons"])
    return out


def why_no_doubt(rows: Iterable[Mapping[str, Any]], t: Thresholds = Thresholds(),
                 signals: Iterable[str] = SIGNALS) -> list[str]:
    """Why no item was flagged: one sentence per chosen signal, saying whether the runs could
    carry it at all (a G-Eval run gives probabilities, a swap run verdict flips...) or did and
    stayed inside the thresholds. For an admin who sent 0 items and wants to know why."""
    rows = list(rows)
    if not rows:
        return ["the chosen runs have no judge scores yet"]
    doubts = [r.get("doubt") or {} for r in rows]
    has = lambda key: any(key in d for d in doubts)  # noqa: E731
    runs = {r["run"] for r in rows}
    why = {
        "low_confidence": (f"every top score probability is at least {t.min_top_prob:g}" if has("top_prob")
                           else "no score carries a probability (only G-Eval / logprob runs do)"),
        "swap_disagreement": ("no pairwise verdict flipped when the responses swapped" if has("swap_disagreement")
                              else "no run judged pairs with a swap"),
        "inconsistent": (f"every self-consistency spread is at most {t.max_spread:g} and agreement at least "
                         f"{t.min_agreement:g}" if has("spread") or has("agreement")
                         else "no run sampled several answers (self-consistency)"),
        "escalated_disagreement": ("the small judge and the experts agreed" if has("small_expert_disagree")
                                   else "no run used escalation"),
        "judge_failed": "every judge answer was parsed",
        "judges_disagree": (f"no two runs scored an output {t.min_range:g} or more apart" if len(runs) > 1
                            else "only one run was chosen, so runs cannot disagree"),
    }
    return [f"{name.replace('_', ' ')}: {why[name]}" for name in SIGNALS if name in set(signals)]
