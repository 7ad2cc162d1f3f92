"""The report under active inference (issue 58 §1): an active design sends the items the judges disagree on
to humans more often, so the plain mean over the rated items is biased; the report's human-only system means
are Hájek-weighted by the recorded probabilities and recover the planted mean, and the page and the methods
say that the agreement figures are not weighted. A planted-truth study, drawn and rated through the services,
read through the report's route."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from annotation.models import Item, Rating
from annotation.reports.methods import methods_paragraph
from annotation.reports.study import study_report
from annotation.services.active_inference import active_draw
from annotation.services.assignments import assignment_next
from annotation.services.items import items_import
from annotation.services.ratings import assignment_submit
from annotation.services.studies import study_create, study_members_add, study_set_status
from annotation.stats.ranking import compare_systems
from rubrics.services import rubric_version_create
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

RUBRIC = {"slug": "active-weighted", "name": "Active weighted", "criteria": [
    {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 5}]}
N = 240
# Planted truth: on a hard item (a third of them) system a scores 1 and b 2, elsewhere a 5 and b 4; the
# jury agrees on the easy items and disagrees on the hard ones, where its mean (3.67) is far from the truth.
TRUTH = {"a": (1, 5), "b": (2, 4)}
PLANTED = {s: (hard * N // 3 + easy * (N - N // 3)) / N for s, (hard, easy) in TRUTH.items()}


def _hard(k: int) -> bool:
    return k % 3 == 0


def _jury(study) -> list:
    rows = []
    for item in Item.objects.filter(study=study).prefetch_related("outputs"):
        k = int(item.external_id[1:])
        for out in item.outputs.all():
            rows.append((item.pk, out.pk, [4.0, 2.0, 5.0] if _hard(k) else [float(TRUTH[out.system][1])] * 3))
    return rows


def _rate_drawn(study, raters) -> int:
    """Each rater rates what the engine serves, with the planted truth (no noise)."""
    n = 0
    for rater in raters:
        while (a := assignment_next(study=study, rater=rater)) is not None:
            k = int(a.item.external_id[1:])
            by_position = {o.position: o for o in a.item.outputs.all()}
            shown = [by_position[p] for p in a.permutation]
            answers = {"responses": {str(i + 1): {"quality": TRUTH[o.system][0 if _hard(k) else 1]}
                                     for i, o in enumerate(shown)}}
            assignment_submit(assignment=a, answers=answers)
            n += 1
    return n


POLICY = {"name": "active_inference", "budget": 72, "pilot": 0.1, "rounds": 3, "floor": 0.2}
REPLICATIONS = 10


def planted_study(admin, name: str = "Active weighted", n: int = N, policy: dict = POLICY, seed: int = 100):
    """A study of n planted items drawn and rated round by round through the services."""
    version, _ = rubric_version_create(data=RUBRIC)
    study = study_create(name=name, rubric_version=version, user=admin, raters_per_item=1, sampling_policy=policy)
    items_import(study=study, filename="items.jsonl", text="\n".join(json.dumps(
        {"id": f"k{k:03d}", "context": f"Question {k}",
         "outputs": [{"system": "a", "content": f"A {k}"}, {"system": "b", "content": f"B {k}"}]}) for k in range(n)))
    raters = [make_user(f"{study.slug}-rater-{j}") for j in range(2)]
    study_members_add(study=study, usernames=[r.username for r in raters], role="annotator")
    study_set_status(study=study, status="open")
    jury = _jury(study)
    for round_no in range(policy["rounds"] + 1):  # the pilot, then the rounds, each rated before the next is drawn
        active_draw(study=study, jury=jury, seed=seed + round_no, round_no=round_no)
        _rate_drawn(study, raters)
    return study


def test_the_weighted_means_recover_the_planted_means_where_the_plain_ones_are_biased(admin_user, client_for):
    """Ten studies (seeds 100, 110, ..., 190; each study's item order also follows its id): one study's
    weighted mean is noisy (its standard error about 0.2 here, the weights of the rarely drawn agreeing
    items large), so the check is on the average over them: on 2026-12-06 +0.06 weighted, −0.39 plain."""
    errors, biases, hard_shares = [], [], []
    for r in range(REPLICATIONS):
        study = planted_study(admin_user, name=f"Active weighted {r}", seed=100 + 10 * r)
        rated = Item.objects.filter(study=study, slots_wanted__gt=0).values_list("external_id", flat=True)
        hard_shares.append(np.mean([_hard(int(e[1:])) for e in rated]))
        report = study_report(study)
        weighted = report["systems"]["criteria"]["quality"]["systems"]
        plain = compare_systems(_frame(study))["criteria"]["quality"]["systems"]  # the report's means before
        errors.append([weighted[s]["mean"] - PLANTED[s] for s in "ab"])
        biases.append([plain[s]["mean"] - PLANTED[s] for s in "ab"])
        assert all(weighted[s]["weighted"] is True and weighted[s]["ci"] for s in "ab")
    assert np.mean(hard_shares) > 0.4  # the design over-sampled the hard items (a third of the population)
    error, bias = np.mean(errors, axis=0), np.mean(biases, axis=0)
    # b's values span half a's (2 to 4 against 1 to 5): its error and bias are half a's
    assert np.all(np.abs(error) < [0.2, 0.1]) and np.all(bias < [-0.25, -0.125]), (error, bias)

    assert report["sampling"] == {"policy": "active_inference", "weighted": "hajek", "items_with_probability": N}
    assert report["systems"]["criteria"]["quality"]["pairs"][0]["test"] == "weighted mean difference (normal)"
    text = methods_paragraph(study, report)
    assert "Hájek-weighted" in text and "cannot be reweighted honestly" in text
    page = client_for(admin_user).get(f"/studies/{study.slug}/report/").content.decode()
    assert "data-unweighted-note" in page and "data-weighted-note" in page and "cannot be reweighted honestly" in page


def _frame(study) -> pd.DataFrame:
    rows = Rating.objects.filter(assignment__study=study, assignment__status="submitted").values_list(
        "assignment__item_id", "output__system", "score")
    return pd.DataFrame([{"item": i, "system": s, "criterion": "quality", "score": x} for i, s, x in rows])


def test_without_weights_the_means_are_plain_and_say_nothing_of_weights():
    """compare_systems without weights is what it was: no "weighted" entry, Wilcoxon pairs."""
    frame = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "system": ["a", "b"] * 3, "criterion": "q",
                          "score": [5, 4, 4, 3, 3, 3]})
    out = compare_systems(frame)["criteria"]["q"]
    assert out["systems"]["a"]["mean"] == 4.0 and "weighted" not in out["systems"]["a"]
    assert "test" not in out["pairs"][0]
    same = compare_systems(frame, weights={1: 1.0, 2: 1.0, 3: 1.0})["criteria"]["q"]
    assert same["systems"]["a"]["mean"] == pytest.approx(4.0)  # equal weights: the plain mean
