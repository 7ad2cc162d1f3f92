"""Every categorical model on one criterion's labels, and the one that fits best.

"Best" is the lowest BIC (Schwarz 1978): the marginal log-likelihood of the observed labels,
penalised by log(number of labels) per free parameter. A full confusion matrix per rater
(Dawid–Skene) then wins only where raters have enough labels to show class-specific errors;
with a few labels per rater the one-coin model or MACE is chosen. Majority vote enters as the
model of one accuracy shared by all raters, so "best = majority" says the raters look alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .data import LabelModel, Labels
from .dawid_skene import dawid_skene, majority_vote, one_coin
from .glad import glad
from .mace import mace

METHODS: dict[str, Callable[[Labels], LabelModel]] = {
    "majority": majority_vote, "dawid_skene": dawid_skene, "one_coin": one_coin, "glad": glad, "mace": mace,
}


@dataclass(frozen=True)
class ModelChoice:
    """The model chosen by BIC (Schwarz 1978), every fit, and why in one sentence."""

    best: LabelModel
    fits: dict[str, LabelModel]
    reason: str

    def table(self) -> list[dict]:
        """One row per model: method, log-likelihood, parameters, BIC, chosen, and whether its fit
        converged in how many steps."""
        return [{"method": m, "log_likelihood": f.log_likelihood, "n_params": f.n_params, "bic": f.bic,
                 "chosen": m == self.best.method, "converged": f.converged, "iterations": f.iterations}
                for m, f in self.fits.items()]


def best_label_model(data: Labels, methods: tuple[str, ...] = tuple(METHODS)) -> ModelChoice:
    """Fit each method and keep the lowest BIC, Schwarz (1978) (ties to the earlier method in `methods`)."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r}; expected one of {', '.join(METHODS)}")
    fits = {m: METHODS[m](data) for m in methods}
    best = min(fits.values(), key=lambda f: f.bic)
    runner = sorted(fits.values(), key=lambda f: f.bic)[1:2]
    margin = f", {runner[0].bic - best.bic:.1f} below {runner[0].method}" if runner else ""
    return ModelChoice(best, fits, f"{best.method}: lowest BIC ({best.bic:.1f}{margin}) among {', '.join(methods)}")
