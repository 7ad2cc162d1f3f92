"""The report's facet section: agreement and system scores split by a questionnaire answer, equal to
the reference library (krippendorff) and plain means on each group's own ratings."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pandas as pd
import pytest

from annotation.models import PhaseRecord, Rating
from annotation.reports.facets import answer_facets
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from annotation.simulation.items import items_for
from tests.conftest import make_user
from tests.phases.conftest import PHASES

pytestmark = pytest.mark.django_db

SCORES = {  # rater -> helpfulness by the output's system index and the item's number
    # the two native raters agree exactly; their scores vary with the item too, since each of them sees a random
    # pair of an item's four outputs: on the system alone, the outputs they shared were one system's now and then,
    # and agreement on values that never vary is undefined
    "nat1": lambda s, i: 1 + (s + 2 * i) % 7, "nat2": lambda s, i: 1 + (s + 2 * i) % 7,
    "oth1": lambda s, i: 1 + (s + i) % 7, "oth2": lambda s, i: 7 - (s * 3 + i) % 6,
}


def test_agreement_and_system_means_split_by_an_answer(make_study, client_for, admin_user):
    # Twelve items: the natives share an output of an item unless their random pairs miss each other (1 in 6).
    # Agreement is undefined when they share at most one output, or two of equal score. With twelve items that
    # chance is about 1e-7; with five it was about 1 in 300, and a full run on 2026-12-07 met it.
    items = "\n".join(json.dumps(r) for r in items_for("compare-pairwise", 12, seed=2))
    raters = [make_user(name) for name in SCORES]
    study = make_study("compare-pairwise", items_text=items, raters_per_item=4, annotators=raters, phases=PHASES)
    systems = sorted({o.system for item in study.items.all() for o in item.outputs.all()})
    for rater in raters:
        native = "yes" if rater.username.startswith("nat") else "no"
        PhaseRecord.objects.create(study=study, rater=rater, phase="pre", outcome="answered",
                                   answers={"native": native, "age": 30})
        while (a := assignment_next(study=study, rater=rater)) is not None:
            a.study = study
            a.item.load_outputs()
            by_pos = {o.position: o.system for o in a.item.outputs.all()}
            n_item = int(a.item.external_id.rsplit("-", 1)[-1]) if a.item.external_id[-1].isdigit() else a.item.pk
            score = {str(n): {"helpfulness": min(7, SCORES[rater.username](systems.index(by_pos[p]), n_item))}
                     for n, p in enumerate(a.permutation, start=1)}
            assignment_submit(assignment=a, answers={"responses": score, "item": {
                "preference": {"value": {"winner": "1", "strength": "slightly"}}}})
    section = answer_facets(study, {})
    facet = next(f for f in section["data"].items() if f[0] == "pre.native")[1]
    for answer, names in (("yes", ["nat1", "nat2"]), ("no", ["oth1", "oth2"])):
        ratings = list(Rating.objects.filter(assignment__rater__username__in=names, criterion="helpfulness")
                       .values_list("assignment__rater__username", "output_id", "score", "output__system", "output__item_id"))
        units = sorted({r[1] for r in ratings})
        matrix = np.full((2, len(units)), np.nan)
        for who, out, score, *_ in ratings:
            matrix[names.index(who), units.index(out)] = score
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
        got = facet[answer]["criteria"]["helpfulness"]["alpha"]["value"]
        if np.isnan(expected):  # undefined (one shared output at most): no value in the report, never NaN
            assert got is None, answer
        else:
            assert got == pytest.approx(expected, abs=1e-9), answer
        means = facet[answer]["criteria"]["helpfulness"]["system_means"]
        for system in systems:  # the mean over items of the item's mean score (compare_systems' unit)
            per_item = pd.Series([r[2] for r in ratings if r[3] == system],
                                 index=[r[4] for r in ratings if r[3] == system]).groupby(level=0).mean()
            assert means[system] == pytest.approx(per_item.mean())
        assert facet[answer]["n_raters"] == 2
    assert facet["yes"]["criteria"]["helpfulness"]["alpha"]["value"] == pytest.approx(1.0)
    page = client_for(admin_user).get(f"/studies/{study.slug}/report/").content.decode()
    assert "By participants&#x27; answers" in page or "By participants' answers" in page
    assert 'data-facet="pre.native"' in page


def test_a_rubric_of_several_scales_is_split_too(make_study, client_for, admin_user):
    """rrgen-001 rates each output on several scales: the systems' scores then include their combined
    score, computed from each output's raters, and the section must still be computed."""
    from tests.reports.factories import items_jsonl, rate_study

    raters = [make_user(name) for name in ("nat1", "nat2", "oth1", "oth2")]
    study = make_study("rrgen-001", items_text=items_jsonl(6), annotators=raters, phases=PHASES)
    for rater in raters:
        PhaseRecord.objects.create(study=study, rater=rater, phase="pre", outcome="answered",
                                   answers={"native": "yes" if rater.username.startswith("nat") else "no", "age": 30})
    rate_study(study, raters, lambda i, p, r, key, rng: 1 + (i + p * 2 + r * (key == "fluency")) % 7)
    section = answer_facets(study, {})
    facet = section["data"]["pre.native"]
    for answer, names in (("yes", ["nat1", "nat2"]), ("no", ["oth1", "oth2"])):
        ratings = list(Rating.objects.filter(assignment__rater__username__in=names, criterion="fluency",
                                             assignment__ignored=False)
                       .values_list("score", "output__system", "output__item_id"))
        means = facet[answer]["criteria"]["fluency"]["system_means"]
        for system in {r[1] for r in ratings}:
            per_item = pd.Series([r[0] for r in ratings if r[1] == system],
                                 index=[r[2] for r in ratings if r[1] == system]).groupby(level=0).mean()
            assert means[system] == pytest.approx(per_item.mean())
    response = client_for(admin_user).get(f"/studies/{study.slug}/report/")
    assert response.status_code == 200 and 'data-facet="pre.native"' in response.content.decode()
