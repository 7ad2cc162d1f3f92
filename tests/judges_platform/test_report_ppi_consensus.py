"""The PPI estimates of "Trusting the judges" use the rater-effects adjusted mean as the human answer
where the rater models name a strict rater, and the report says which answer each estimate used
(issue 41 §3)."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from annotation.stats.ppi import estimate_system
from annotation.stats.raters import rater_effects
from tests.conftest import make_user
from tests.reports.factories import SYSTEMS, items_jsonl, rate_study

N_ITEMS, N_RATED, STRICT = 40, 32, 3


def truth(i: int, p: int) -> int:
    return 3 + p + (i % 2)  # 3..6 on the 1-7 scale


def planted(i: int, p: int, r: int, key: str, rng) -> int:
    """Three honest raters off by at most a point; the fourth three points strict, on odd items only."""
    return max(1, truth(i, p) + ((i + p + r) % 3 - 1) - (3 if r == STRICT else 0))


@pytest.fixture
def strict_study(make_study, make_judge, make_run, researcher):
    raters = [make_user(f"s{k}") for k in range(4)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(N_ITEMS))
    ignore = {(i, r) for i in range(N_RATED, N_ITEMS) for r in range(4)} | {(i, STRICT) for i in range(0, N_ITEMS, 2)}
    rate_study(study, raters, planted, criteria=["fluency"], ignore=ignore)
    run = make_run(study, make_judge("honest"),
                   {(f"it-{i:03d}", p, "fluency"): truth(i, p) for i in range(N_ITEMS) for p in range(3)})
    return study, run, ignore


def test_ppi_uses_the_adjusted_mean_when_a_rater_is_strict(strict_study, client_for, researcher):
    study, run, ignore = strict_study
    flu = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()[
        "sections"]["Trusting the judges"]["criteria"]["fluency"]
    assert flu["ppi_human_answer"]["answer"] == "rater-effects adjusted mean"
    assert "1 rater(s) lenient or strict" in flu["ppi_human_answer"]["reason"]
    # the reference: the same model fitted here on the planted ratings, then ppi-python's estimator
    unit, rater, x = [], [], []
    for i in range(N_RATED):
        for p in range(3):
            for r in range(4):
                if (i, r) not in ignore:
                    unit.append(i * 3 + p), rater.append(r), x.append(planted(i, p, r, "", None))
    fit = rater_effects(np.array(unit), np.array(rater), np.array(x, float))
    plain = np.bincount(unit, weights=x) / np.bincount(unit)
    got = flu["runs"][0]["systems"]
    for p, system in enumerate(SYSTEMS):
        yhat = np.array([truth(i, p) for i in range(N_RATED)], float)
        unl = np.array([truth(i, p) for i in range(N_RATED, N_ITEMS)], float)
        adjusted = estimate_system(fit.output_mean[p::3], yhat, unl)
        majority = estimate_system(plain[p::3], yhat, unl)
        assert got[system]["ppi_plus"]["mean"] == pytest.approx(adjusted["ppi_plus"]["mean"], abs=1e-6)
        # the estimate the human mean would have given differs
        assert abs(got[system]["ppi_plus"]["mean"] - majority["ppi_plus"]["mean"]) > 0.2
    # why: the strict rater, on odd items only, pulls their plain means down; the adjusted means are off
    # the planted truth by the same on odd and even items (the average rater's level)
    off = lambda means: [np.mean([means[i * 3 + p] - truth(i, p) for i in range(N_RATED) if i % 2 == k  # noqa: E731
                                  for p in range(3)]) for k in (0, 1)]
    assert abs(np.subtract(*off(plain))) > 0.5 and abs(np.subtract(*off(fit.output_mean))) < 0.1
    html = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert "Human answer: the rater-effects adjusted mean" in html


def test_without_a_strict_rater_the_human_mean_stands(strict_study, client_for, researcher):
    """The same study with the strict rater's ratings gone: the report names the human mean."""
    from annotation.models import Rating

    study, run, _ = strict_study
    Rating.objects.filter(assignment__rater__username="s3").delete()
    flu = client_for(researcher).get(reverse("report", args=[study.slug]), {"download": "json"}).json()[
        "sections"]["Trusting the judges"]["criteria"]["fluency"]
    assert flu["ppi_human_answer"]["answer"] == "human mean"
