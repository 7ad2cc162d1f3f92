"""Rater models on planted crowds: seconds per fit, and accuracy against the planted truth.

Labels: 1M labels (200k outputs x 5 raters, 3 classes) from 2,000 raters, of whom 100 always give
the same answer, 100 answer at random and 50 are adversarial; each categorical method fitted once
with its defaults (issue 41: "a million labels by thousands of raters in seconds").
Comparisons (noisy Bradley–Terry): 200k by 2,000 raters (100 guessing), 1M with --full.
Scales (rater effects): 100k ratings by 500 raters, 1M by 1,000 with --full.
The machine's load average is recorded beside the figures: on a shared machine it says how much
of the wall time was someone else's.
"""

from __future__ import annotations

import os
import time

import numpy as np

from annotation.stats.raters import (
    dawid_skene, glad, mace, majority_vote, noisy_bradley_terry, one_coin, rater_effects,
)
from annotation.stats.raters.simulate import planted_comparisons, planted_labels, planted_scores

LABEL_TARGET_S = 10.0


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 4), "unit": unit, "target": target, "ok": ok}


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(full: bool = False) -> dict:
    rows: list[dict] = []
    load_before = os.getloadavg()[0]
    crowd = planted_labels(n_items=200_000, n_raters=2000, per_item=5, n_classes=3,
                           kinds={"spammer": 100, "random": 100, "adversarial": 50}, seed=0)
    size = f"{crowd.data.n / 1e6:g}M labels x {crowd.data.n_raters} raters"
    for name, fit in (("majority", majority_vote), ("dawid_skene", dawid_skene), ("one_coin", one_coin),
                      ("mace", mace), ("glad", glad)):
        seconds, model = _timed(lambda: fit(crowd.data))
        rows.append(_row(f"{name}: {size} ({model.iterations} iterations)", seconds, "s",
                         f"<= {LABEL_TARGET_S:g} s", seconds <= LABEL_TARGET_S))
        rows.append(_row(f"{name}: accuracy against the planted truth", np.mean(model.labels == crowd.truth), "share"))
    n_cmp = 1_000_000 if full else 200_000
    cmp = planted_comparisons(n_outputs=2000, n_raters=2000, n=n_cmp, spammers=100, seed=0)
    seconds, model = _timed(lambda: noisy_bradley_terry(cmp.raters, cmp.left, cmp.right, cmp.left_wins))
    rows.append(_row(f"noisy_bradley_terry: {n_cmp / 1e3:g}k comparisons x 2000 raters ({model.iterations} "
                     "iterations, 2 starts)", seconds, "s"))
    rows.append(_row("noisy_bradley_terry: correlation with the planted strengths",
                     np.corrcoef(model.strength, cmp.strength)[0, 1], "r"))
    n_out, n_r = (200_000, 1000) if full else (20_000, 500)
    scores = planted_scores(n_outputs=n_out, n_raters=n_r, per_output=5, seed=0)
    seconds, model = _timed(lambda: rater_effects(scores.outputs, scores.raters, scores.scores))
    rows.append(_row(f"rater_effects: {scores.scores.size / 1e3:g}k ratings x {n_r} raters ({model.iterations} "
                     "iterations)", seconds, "s"))
    rows.append(_row("rater_effects: correlation with the planted rater biases",
                     np.corrcoef(model.rater_bias, scores.bias)[0, 1], "r"))
    return {"name": "rater_models", "rows": rows,
            "load_average": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}}
