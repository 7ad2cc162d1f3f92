"""A fitted model as two plain tables: one row per unit (posteriors or adjusted mean), one per rater.

Rows are dicts of plain values (str, int, float, None), ready for JSON or CSV; the caller names
the units and raters (`units[i]`, `raters[r]`) and, for labels, the classes (`choices[c]`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .data import LabelModel
from .effects import RaterEffects

# the method's own per-rater estimate, by name: (model key, column)
_OWN = {"dawid_skene": None, "one_coin": ("skill", "skill"), "glad": ("ability", "ability"),
        "mace": ("competence", "competence")}


def _num(x: Any) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def label_tables(fit: LabelModel, units: Sequence[Any], raters: Sequence[Any],
                 choices: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """Units: unit, label (most probable), posterior of each choice (`p_<choice>`).
    Raters: rater, n, accuracy (the model's estimate), agreement (mean posterior of their labels),
    and the method's own estimate (skill, ability, competence; Dawid–Skene: the diagonal of the
    confusion matrix as `p_right_<choice>`)."""
    labels = fit.labels
    unit_rows = [{"unit": u, "label": choices[labels[i]],
                  **{f"p_{c}": float(fit.posteriors[i, k]) for k, c in enumerate(choices)}}
                 for i, u in enumerate(units)]
    own = _OWN.get(fit.method)
    rater_rows = []
    for r, name in enumerate(raters):
        row = {"rater": name, "n": int(fit.rater_n[r]), "accuracy": _num(fit.rater_accuracy[r]),
               "agreement": _num(fit.rater_agreement[r])}
        if own:
            row[own[1]] = _num(fit.rater[own[0]][r])
        elif fit.method == "dawid_skene":
            row.update({f"p_right_{c}": _num(fit.rater["confusion"][r, k, k]) for k, c in enumerate(choices)})
        rater_rows.append(row)
    return unit_rows, rater_rows


def effects_tables(fit: RaterEffects, units: Sequence[Any], raters: Sequence[Any]) -> tuple[list[dict], list[dict]]:
    """Units: unit, n, adjusted mean, se, ci_low, ci_high. Raters: rater, n, bias, noise_sd."""
    unit_rows = [{"unit": u, "n": int(fit.output_n[i]), "adjusted_mean": _num(fit.output_mean[i]),
                  "se": _num(fit.output_se[i]), "ci_low": _num(fit.ci_low[i]), "ci_high": _num(fit.ci_high[i])}
                 for i, u in enumerate(units)]
    rater_rows = [{"rater": name, "n": int(fit.rater_n[r]), "bias": _num(fit.rater_bias[r]),
                   "noise_sd": _num(fit.rater_sd[r])} for r, name in enumerate(raters)]
    return unit_rows, rater_rows
