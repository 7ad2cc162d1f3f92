"""Simulated answers to comparative questions (pairwise, ranking, best_worst), by shown number as
the workspace posts them. Each rater perceives each shown output's quality (truth + their bias +
noise, plus the study's position bias for the output shown first) and answers from that."""

from __future__ import annotations

from typing import Any, Sequence

from annotation.models import Item, Output
from annotation.simulation.items import system_effect
from annotation.simulation.latent import Knobs, output_quality, perceived

TIE_BAND = 0.15  # a rater who sees less than this between two outputs calls a tie (where allowed)
CLEARLY = 0.8  # ... and more than this, "clearly better"


def _perceived(criterion: dict, *, preset: str, item: Item, shown: Sequence[Output], who: str, knobs: Knobs,
               seed: int) -> list[float]:
    ext = item.external_id
    return [perceived(output_quality(seed, system_effect(preset, o.system), ext, o.position), seed=seed, who=who,
                      knobs=knobs, item_id=ext, position=o.position, criterion=criterion["key"],
                      shown_first=(n == 0 and len(shown) > 1))
            for n, o in enumerate(shown)]


def comparative_answer(criterion: dict, *, preset: str, item: Item, shown: Sequence[Output], who: str,
                       knobs: Knobs, seed: int) -> dict[str, Any]:
    """{"value": ..., "reasoning": ...} for one comparative question over the outputs shown."""
    z = _perceived(criterion, preset=preset, item=item, shown=shown, who=who, knobs=knobs, seed=seed)
    order = sorted(range(len(z)), key=lambda i: -z[i])  # shown indexes, best first
    kind = criterion["kind"]
    reasoning = ""
    if kind == "pairwise":
        gap = z[0] - z[1]
        if criterion.get("ties") and abs(gap) < TIE_BAND:
            value = {"winner": "tie", "strength": None}
        else:
            strength = ("clearly" if abs(gap) > CLEARLY else "slightly") if criterion.get("strength") else None
            value = {"winner": "1" if gap > 0 else "2", "strength": strength}
        if criterion.get("reasoning") == "required" or (criterion.get("reasoning") == "optional" and abs(gap) > CLEARLY):
            reasoning = "One answer is correct and complete; the other misses the point."
    elif kind == "ranking":
        value = {"ranks": {str(i + 1): order.index(i) + 1 for i in range(len(z))}}
    else:  # best_worst
        value = {"best": str(order[0] + 1), "worst": str(order[-1] + 1)}
    if criterion.get("reasoning") == "required" and not reasoning:
        reasoning = "The best is faithful and complete; the worst leaves out the main point."
    return {"value": value, "reasoning": reasoning}
