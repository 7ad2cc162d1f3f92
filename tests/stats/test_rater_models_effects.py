"""The rater-effects model on scales against statsmodels' MixedLM, and on planted raters.

With one noise SD for all raters the model is MixedLM's: fixed output means, a random intercept
per rater, REML. Tolerances (MixedLM's optimiser stops at a gradient of about 1e-6, so its
estimates move in the fifth decimal): output means and rater biases within 1e-4, the two SDs
within 1e-4 relative, the REML log-likelihood within 1e-6 relative. Standard errors are checked
against the GLS covariance (X' V^-1 X)^-1 with V built densely from the fitted variances (1e-9):
MixedLM's bse_fe differ by up to about 1% because they come from the numerical Hessian of the
whole likelihood, variance parameters included.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from annotation.stats.raters import LabelError, rater_effects
from annotation.stats.raters.simulate import planted_scores

SIZES = [dict(n_outputs=40, n_raters=12, per_output=4, seed=3), dict(n_outputs=60, n_raters=9, per_output=3, seed=7),
         dict(n_outputs=25, n_raters=20, per_output=6, seed=11)]


def _mixedlm(s):
    df = pd.DataFrame({"o": s.outputs, "r": s.raters, "y": s.scores})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MixedLM's convergence chatter on the boundary
        return smf.mixedlm("y ~ 0 + C(o)", df, groups=df["r"]).fit(reml=True)


@pytest.mark.parametrize("size", SIZES)
def test_homoscedastic_case_equals_mixedlm(size):
    s = planted_scores(noise_sd=(0.6, 0.6), **size)
    ours = rater_effects(s.outputs, s.raters, s.scores, heteroscedastic=False)
    ref = _mixedlm(s)
    assert ours.converged
    assert np.abs(ref.fe_params.to_numpy() - ours.output_mean).max() < 1e-4
    re = np.array([ref.random_effects[r].iloc[0] for r in range(size["n_raters"])])
    assert np.abs(re - ours.rater_bias).max() < 1e-4
    assert ours.bias_sd == pytest.approx(np.sqrt(ref.cov_re.iloc[0, 0]), rel=1e-4)
    assert ours.noise_sd == pytest.approx(np.sqrt(ref.scale), rel=1e-4)
    assert ours.log_likelihood == pytest.approx(ref.llf, rel=1e-6)


def test_standard_errors_are_the_gls_covariance():
    s = planted_scores(n_outputs=30, n_raters=10, per_output=4, seed=5)
    fit = rater_effects(s.outputs, s.raters, s.scores)
    n = s.scores.size
    x = np.zeros((n, 30))
    x[np.arange(n), s.outputs] = 1
    z = np.zeros((n, 10))
    z[np.arange(n), s.raters] = 1
    v = fit.bias_sd ** 2 * z @ z.T + np.diag(fit.rater_sd[s.raters] ** 2)
    cov = np.linalg.inv(x.T @ np.linalg.solve(v, x))
    assert np.abs(np.sqrt(np.diag(cov)) - fit.output_se).max() < 1e-9
    gls = cov @ x.T @ np.linalg.solve(v, s.scores)
    assert np.abs(gls - fit.output_mean).max() < 1e-9
    assert np.allclose(fit.ci_high - fit.output_mean, 1.959963984540054 * fit.output_se)


def test_planted_biases_and_noise_are_recovered():
    s = planted_scores(n_outputs=400, n_raters=30, per_output=5, bias_sd=0.5, noise_sd=(0.3, 1.2), seed=4)
    fit = rater_effects(s.outputs, s.raters, s.scores)
    assert fit.converged
    assert np.corrcoef(s.bias, fit.rater_bias)[0, 1] > 0.95
    assert np.corrcoef(s.noise_sd, fit.rater_sd)[0, 1] > 0.9
    assert fit.bias_sd == pytest.approx(np.std(s.bias), rel=0.25)
    # the adjusted mean estimates the output's level plus the raters' average bias
    target = s.level + s.bias.mean()
    covered = np.mean((fit.ci_low <= target) & (target <= fit.ci_high))
    assert 0.9 <= covered <= 0.99
    # adjusting for the raters beats the plain mean of each output's scores
    plain = np.bincount(s.outputs, weights=s.scores) / np.bincount(s.outputs)
    assert np.mean((fit.output_mean - target) ** 2) < 0.8 * np.mean((plain - target) ** 2)


def test_a_strict_rater_is_found():
    s = planted_scores(n_outputs=200, n_raters=15, per_output=4, bias_sd=0.2, noise_sd=(0.5, 0.5), seed=8)
    scores = s.scores.copy()
    scores[s.raters == 6] -= 2.0  # rater 6 marks everything two points down
    fit = rater_effects(s.outputs, s.raters, scores)
    assert int(np.argmin(fit.rater_bias)) == 6
    assert fit.rater_bias[6] == pytest.approx(s.bias[6] - 2.0, abs=0.3)


def test_bad_scores_are_named():
    with pytest.raises(LabelError, match=r"scores\[2\] = nan"):
        rater_effects([0, 1, 2], [0, 1, 0], [1.0, 2.0, float("nan")])
    with pytest.raises(LabelError, match="differ in length"):
        rater_effects([0, 1], [0, 1, 2], [1.0, 2.0])
    with pytest.raises(LabelError, match=r"raters\[1\] = -1"):
        rater_effects([0, 1], [0, -1], [1.0, 2.0])
