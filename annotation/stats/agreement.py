"""Inter-rater agreement over an items x raters float matrix (NaN = not rated).

One entry point per statistic, each returning `Stat` (value, or None with a reason):
Krippendorff's alpha (4 levels), the six ICCs with CIs (complete cases only), Fleiss'
kappa, Cohen's kappa per rater pair and their mean, pairwise Pearson/Spearman and their
means, percent agreement. `matrix_agreement` computes all of them at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .icc import FORMS as ICC_FORMS
from .icc import icc
from .kappa import (
    cohen_kappa,
    fleiss_and_agreement,
    fleiss_kappa,
    mean_of,
    pairwise_cohen,
    pairwise_cohens,
    percent_agreement,
)
from .krippendorff import LEVELS, Pairable, krippendorff_all, krippendorff_alpha
from .pairwise import kendall_tau_b, pairwise_correlations, pearson, spearman
from .result import Stat

__all__ = [
    "ICC_FORMS", "LEVELS", "Stat", "cohen_kappa", "fleiss_kappa", "icc", "kendall_tau_b",
    "krippendorff_all", "krippendorff_alpha", "matrix_agreement", "pairwise_cohen",
    "pairwise_correlations", "pearson", "percent_agreement", "spearman",
]


def matrix_agreement(matrix: np.ndarray) -> dict[str, Any]:
    """Every inter-rater statistic of one criterion, as Stats, in the report's key layout.

    Reference: Krippendorff (2011); Shrout & Fleiss (1979); Fleiss (1971); Cohen (1960, 1968).
    """
    x = np.asarray(matrix, dtype=float)
    p = Pairable(x)
    fleiss, agree = fleiss_and_agreement(p)
    corr = pairwise_correlations(x)
    return {
        "krippendorff_alpha": {level: krippendorff_alpha(p, level) for level in LEVELS},
        "icc": icc(x),
        "fleiss_kappa": fleiss,
        "cohen_kappa": {w: mean_of(list(pairs.values()), f"Cohen's kappa ({w})")
                        for w, pairs in pairwise_cohens(x, ("unweighted", "linear", "quadratic")).items()},
        "mean_pairwise_pearson": mean_of(list(corr["pearson"].values()), "Pearson"),
        "mean_pairwise_spearman": mean_of(list(corr["spearman"].values()), "Spearman"),
        "percent_agreement": agree,
    }
