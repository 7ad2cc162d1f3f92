"""annotation.stats.ranking.wilcoxon_pvalue gives what scipy.stats.wilcoxon gives, in every branch of SciPy's
method="auto": the exact permutation distribution it enumerates slowly (ties or zero differences, up to 13 pairs),
its exact distribution without ties, and its normal approximation above 13 pairs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import wilcoxon

from annotation.stats.ranking import EXACT_FLIPS_UP_TO, wilcoxon_pvalue


def _pairs(seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(1, 2 * EXACT_FLIPS_UP_TO))
        a, b = rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)  # Likert: ties, zeros
        if rng.random() < 0.3:
            a = a + rng.normal(0, 0.3, n).round(2)  # per-item means of several raters
        if np.any(a != b):
            yield a, b


@pytest.mark.parametrize("seed", range(5))
def test_equal_to_scipy_on_likert_means(seed):
    seen_exact = 0
    for a, b in _pairs(seed):
        assert wilcoxon_pvalue(a, b) == pytest.approx(float(wilcoxon(a, b).pvalue), rel=1e-12, abs=1e-15)
        seen_exact += a.size <= EXACT_FLIPS_UP_TO
    assert seen_exact > 10  # the branch SciPy enumerates slowly is among them


def test_the_enumerated_branch_with_ties_and_zeros():
    a = np.array([3, 4, 5, 2, 4, 4, 5, 3, 1, 4.0])
    b = np.array([2, 4, 3, 2, 2, 5, 4, 1, 3, 4.0])  # differences 1, 0, 2, 0, 2, -1, 1, 2, -2, 0
    assert wilcoxon_pvalue(a, b) == pytest.approx(float(wilcoxon(a, b).pvalue), rel=1e-12)
    assert 0 < wilcoxon_pvalue(a, b) < 1


def test_without_ties_and_above_thirteen_pairs_it_is_scipys_own():
    d = np.array([6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75.0])  # SciPy's docs, Cheng's data
    assert wilcoxon_pvalue(d, np.zeros_like(d)) == pytest.approx(0.0413, abs=5e-5)  # as SciPy's docs print it
