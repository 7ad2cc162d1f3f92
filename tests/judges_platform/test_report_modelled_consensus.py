"""Judges vs humans names its human answer and gives each judge's agreement with the consensus of the
rater models beside the majority's (issue 41 §3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.urls import reverse

from annotation.reports.rater_models import modelled_consensus
from tests.judges_platform.conftest import make_judge, make_run  # noqa: F401  (fixtures)
from tests.reports.test_rater_models_section import N_ITEMS, crowd_study, truth  # noqa: F401  (fixture)


@pytest.mark.django_db
def test_judges_vs_humans_names_the_modelled_consensus_beside_the_majority(crowd_study, make_judge, make_run,
                                                                          client_for, researcher):
    """The judges' section says which human answer it uses, and gives each judge's agreement with the
    consensus of the rater models as well (the same labels the report's section chooses)."""
    values = {(f"it-{i:03d}", p, "decision"): "ACCEPT" if truth(i, p) >= 4 else "REJECT"
              for i in range(N_ITEMS) for p in range(3)}
    run = make_run(crowd_study, make_judge("crowd-judge"), values, criteria=["decision"])
    c = client_for(researcher)
    section = c.get(reverse("report", args=[crowd_study.slug]), {"download": "json"}).json()["sections"]
    modelled = section["Judges vs humans"]["criteria"]["decision"]["modelled"]
    report_method = json.loads(c.get(reverse("report", args=[crowd_study.slug]), {"download": "json"})
                               .content)["rater_models"]["criteria"]["decision"]["method"]
    assert modelled["method"] == report_method
    got = modelled["judges"][f"crowd-judge (run {run.pk})"]
    assert got["n"] == N_ITEMS * 3 and 0.5 <= got["agreement"] <= 1.0
    # the function on a matrix: a unit nobody labelled has no consensus
    m = np.array([[0, 0, 1], [1, 1, 1], [np.nan, np.nan, np.nan]] * 4, dtype=float)
    fit = modelled_consensus(m, 2)
    assert np.isnan(fit["labels"][2]) and fit["labels"][1] == 1 and fit["method"]
    html = c.get(reverse("report", args=[crowd_study.slug])).content.decode()
    assert "Against the consensus that models the raters" in html
