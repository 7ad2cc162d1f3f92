"""Confidence sequences (annotation/stats/sequential.py) against confseq's own code.

confseq 0.0.11 does not build on Python 3.11 (its vendored pybind11 predates 3.11) and `expectation`
needs Python 3.12, so neither is in the dev extra: tests/stats/data/confseq_reference.json holds
confseq's outputs, computed by its predmix.py (gostevehoward/confseq@70b1ef30, pure Python) and by its
uniform_boundaries.h (normal_mixture_bound, compiled against Boost) on the series stored there.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from annotation.stats.sequential import (
    asymptotic_cs, confidence_sequence, fixed_sample_interval, ipw_ppi_confidence_sequence,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "confseq_reference.json").read_text())


@pytest.mark.parametrize("key", sorted(REFERENCE["predmix_empbern_twosided_cs"]))
def test_empirical_bernstein_cs_equals_confseq(key):
    ref = REFERENCE["predmix_empbern_twosided_cs"][key]
    ours = confidence_sequence(ref["x"], alpha=0.05, running_intersection=key.endswith("intersected"))
    assert np.allclose(ours["lower"], ref["lower"], atol=1e-12, rtol=0)
    assert np.allclose(ours["upper"], ref["upper"], atol=1e-12, rtol=0)


def test_rescaled_and_vectorised():
    ref = REFERENCE["predmix_empbern_twosided_cs"]["beta25/intersected"]
    x = np.asarray(ref["x"])
    ours = confidence_sequence(np.vstack([1 + 4 * x, 1 + 4 * x[::-1]]), lower=1, upper=5)
    assert np.allclose(ours["lower"][0], 1 + 4 * np.asarray(ref["lower"]), atol=1e-11)
    assert np.allclose(ours["upper"][1], confidence_sequence(1 + 4 * x[::-1], lower=1, upper=5)["upper"])
    with pytest.raises(ValueError, match=r"x must lie in \[1, 5\]"):
        confidence_sequence([1, 6], lower=1, upper=5)


def test_asymptotic_cs_is_the_two_sided_normal_mixture_of_howard_et_al():
    # Its half-width is σ̂_t/t times confseq's two-sided normal-mixture boundary at v = t, tuned at v_opt = t_opt.
    rng = np.random.default_rng(0)
    z = rng.normal(size=10000)
    t_all = np.arange(1, z.size + 1)
    sd = np.sqrt(np.cumsum(z ** 2) / t_all - (np.cumsum(z) / t_all) ** 2)
    checked = 0
    for t_opt, t, bound in REFERENCE["normal_mixture_bound_two_sided"]:
        if t < 2:
            continue
        cs = asymptotic_cs(z, t_opt=t_opt)
        i = int(t) - 1
        assert cs["upper"][i] - cs["mean"][i] == pytest.approx(sd[i] * bound / t, rel=1e-12)
        checked += 1
    assert checked >= 20


def test_peeking_after_every_observation():
    # 400 null series of 300 fair-coin-with-ties outcomes: the CS stays at alpha, the fixed interval does not.
    rng = np.random.default_rng(1)
    x = rng.choice([0.0, 0.5, 1.0], size=(400, 300), p=[0.4, 0.2, 0.4])
    look = slice(9, None)  # from the 10th rating on
    cs = confidence_sequence(x)
    fixed = fixed_sample_interval(x)
    asym = asymptotic_cs(x, t_opt=100)

    def wrong(iv):
        return np.mean(np.any((iv["lower"][:, look] > 0.5) | (iv["upper"][:, look] < 0.5), axis=1))
    assert wrong(cs) <= 0.05
    assert wrong(asym) <= 0.08
    assert wrong(fixed) >= 0.15


def test_ipw_ppi_cs_covers_the_mean():
    rng = np.random.default_rng(2)
    n = 2000
    y = rng.normal(size=(200, n))
    yhat = y + 0.5 + rng.normal(size=(200, n))
    pi = np.full(n, 0.3)
    missed = 0
    for row_y, row_f in zip(y, yhat):
        rated = rng.random(n) < pi
        cs = ipw_ppi_confidence_sequence(row_y, row_f, pi, rated, t_opt=500)
        missed += np.any((cs["lower"][49:] > 0) | (cs["upper"][49:] < 0))
    assert missed / len(y) <= 0.08
