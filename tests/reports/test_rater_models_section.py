"""The report's consensus that models the raters: per criterion the model chosen and why, how often it
departs from the majority, each rater's estimates beside agreement, and "next steps" naming the raters
whose estimates say to check them — on the page, in the JSON, CSV and standalone HTML downloads."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.models import Assignment
from annotation.reports.study import study_report
from annotation.stats.raters import best_label_model, label_data
from tests.conftest import make_user
from tests.reports.factories import items_jsonl, rate_study

N_ITEMS = 12
HONEST, SPAMMER, YES_SAYER = (0, 1, 2), 3, 4
STRICT = 2  # the third honest rater is also two points strict on every scale


def truth(i: int, p: int) -> int:
    return 6 - 2 * p + (i % 2)  # sys-a best, then sys-b, then sys-c; 1-7 scale


def planted(i: int, p: int, r: int, key: str, rng) -> object:
    score = truth(i, p)
    if key == "decision":
        right = "ACCEPT" if score >= 4 else "REJECT"
        if r == SPAMMER:
            return rng.choice(["ACCEPT", "REJECT"])
        if r == YES_SAYER:
            return "ACCEPT"
        return right if (i + p + r) % 9 else ("REJECT" if right == "ACCEPT" else "ACCEPT")  # a slip now and then
    noise = (i + p + r) % 3 - 1
    return max(1, min(7, score + noise - (STRICT if r == 2 else 0)))


@pytest.fixture
def crowd_study(make_study, researcher):
    raters = [make_user(f"crowd{k}") for k in range(5)]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher], items_text=items_jsonl(N_ITEMS))
    rate_study(study, raters, planted)
    return study


@pytest.mark.django_db
def test_the_section_finds_the_spammer_the_yes_sayer_and_the_strict_rater(crowd_study):
    report = study_report(crowd_study, n_boot=50)
    section = report["rater_models"]
    decision = section["criteria"]["decision"]
    assert decision["measure"] == "categorical" and decision["n_units"] == N_ITEMS * 3
    # the method chosen: the lowest BIC if 10 or more below majority vote's, and the fit table says which
    chosen = [f for f in decision["fits"] if f["chosen"]]
    assert [f["method"] for f in chosen] == [decision["method"]]
    bics = {f["method"]: f["bic"] for f in decision["fits"]}
    lowest = min(bics, key=bics.get)
    expected = lowest if bics["majority"] - bics[lowest] >= 10 else "majority"
    assert decision["method"] == expected and "BIC" in decision["reason"]
    raters = {r["rater"]: r for r in decision["raters"]}
    assert raters["crowd3"]["to_check"] and raters["crowd4"]["to_check"]
    assert not any(raters[f"crowd{k}"]["to_check"] for k in HONEST)
    # estimated accuracy beside agreement: the honest raters above both planted bad ones
    assert min(raters[f"crowd{k}"]["accuracy"] for k in HONEST) > max(raters["crowd3"]["accuracy"],
                                                                     raters["crowd4"]["accuracy"])
    assert all(0 <= r["agreement"] <= 1 for r in raters.values())
    # how often the model departs from the majority, counted against a refit here
    assert decision["differs_from_majority"] == round(decision["differs_share"] * decision["n_units"])

    scale = section["criteria"]["fluency"]
    assert scale["measure"] == "numeric" and scale["method"] == "rater_effects"
    biases = {r["rater"]: r for r in scale["raters"]}
    assert min(biases, key=lambda k: biases[k]["bias"]) == "crowd2"
    assert "strict by" in biases["crowd2"]["to_check"]

    flagged = {r["rater"] for r in section["to_check"]}
    assert {"crowd2", "crowd3", "crowd4"} <= flagged and not {"crowd0", "crowd1"} & flagged


@pytest.mark.django_db
def test_the_consensus_is_the_best_fitting_model_on_the_same_labels(crowd_study):
    """The section's numbers are those of annotation.stats.raters on the study's labels, refitted here."""
    report = study_report(crowd_study, n_boot=50)
    decision = report["rater_models"]["criteria"]["decision"]
    units, raters, labels = {}, {}, []
    for a in Assignment.objects.filter(study=crowd_study).select_related("rater").order_by("id"):
        for rating in a.ratings.filter(criterion="decision"):
            unit = units.setdefault((a.item_id, rating.output_id), len(units))
            rater = raters.setdefault(a.rater.username, len(raters))
            labels.append((unit, rater, ["ACCEPT", "REJECT"].index(rating.value)))
    u, r, k = zip(*labels)
    choice = best_label_model(label_data(u, r, k, n_classes=2))
    majority = choice.fits["majority"]
    used = choice.best if majority.bic - choice.best.bic >= 10 else majority
    assert decision["method"] == used.method
    assert decision["differs_from_majority"] == int((used.labels != majority.labels).sum())
    estimates = choice.fits["mace"] if used.method == "majority" else used  # one accuracy for all: MACE's
    assert decision["accuracy_from"] == estimates.method
    for name, code in raters.items():
        got = next(x for x in decision["raters"] if x["rater"] == name)
        assert got["accuracy"] == pytest.approx(estimates.rater_accuracy[code], abs=1e-6)
        assert got["competence"] == pytest.approx(choice.fits["mace"].rater["competence"][code], abs=1e-6)


@pytest.mark.django_db
def test_the_page_and_every_download_show_the_section(crowd_study, client_for, researcher):
    c = client_for(researcher)
    url = reverse("report", args=[crowd_study.slug])
    html = c.get(url).content.decode()
    assert 'href="#consensus-models"' in html and 'id="consensus-models"' in html
    section = html[html.index('id="consensus-models"'):html.index('id="consensus"')]
    assert "It departs from the majority on" in section and "Estimated accuracy" in section
    assert section.count('class="to-check"') >= 3 and "crowd3" in section and 'class="model-bar' in section
    assert "Estimated bias (points)" in section  # the scales' table
    answers = html[html.index('id="answer-next"'):]
    assert "crowd3" in answers and "crowd4" in answers and "without looking" in answers

    data = json.loads(c.get(url, {"download": "json"}).content)
    assert set(data["rater_models"]["criteria"]) >= {"decision"}
    assert {"crowd3", "crowd4"} <= {r["rater"] for r in data["summary"]["next"]["raters_to_check"]}

    rows = list(csv.reader(io.StringIO(c.get(url, {"download": "csv"}).content.decode())))
    mine = [r for r in rows if r[0] == "rater_models"]
    assert any(r[1] == "decision" and r[3].startswith("method=") and "BIC" in r[7] for r in mine)
    assert any(r[1] == "decision" and r[2] == "crowd3" and r[3] == "to_check" for r in mine)
    assert any(r[2] == "crowd2" and r[3] == "bias" and float(r[4]) < 0 for r in mine)

    standalone = c.get(url, {"download": "html"}).content.decode()
    assert 'id="consensus-models"' in standalone and ".model-bar" in standalone


@pytest.mark.django_db
def test_payments_and_assignments_are_untouched_by_the_flags(crowd_study):
    """Naming a rater to check changes nothing stored: no assignment is ignored or rejected."""
    before = list(Assignment.objects.filter(study=crowd_study).values_list("id", "status", "ignored"))
    study_report(crowd_study, n_boot=50)
    assert list(Assignment.objects.filter(study=crowd_study).values_list("id", "status", "ignored")) == before


def test_a_releases_rater_estimates_do_not_depend_on_the_order_the_database_returns_the_ratings(crowd_study,
                                                                                                monkeypatch):
    """PostgreSQL returns the rows in no set order; a release's raters table (and its sha256) must come out the
    same, to the last bit, in any order."""
    from annotation.reports import rater_models

    read = rater_models.stats_frame
    first = rater_models.study_rater_models(crowd_study)
    for seed in (1, 2):
        monkeypatch.setattr(rater_models, "stats_frame", lambda study, keys, seed=seed: read(study, keys).sample(
            frac=1.0, random_state=seed))
        again = rater_models.study_rater_models(crowd_study)
        assert again["raters"] == first["raters"]
        assert again["labels"] == first["labels"]
    assert first["raters"] and first["labels"]


def test_a_better_fitting_model_that_makes_most_raters_guessers_is_not_the_consensus():
    """On a small study a label model's likelihood has other peaks, where the truth is what one or two odd raters
    said: a BIC far below majority vote's but the median rater at chance. The raters' majority is kept then."""
    from types import SimpleNamespace

    import numpy as np

    from annotation.reports.rater_models import BIC_MARGIN, _chosen

    majority = SimpleNamespace(method="majority", bic=230.0)

    def choice(accuracies):
        best = SimpleNamespace(method="one_coin", bic=230.0 - BIC_MARGIN - 3, posteriors=np.zeros((33, 2)),
                               rater_accuracy=np.array(accuracies))
        return SimpleNamespace(fits={"majority": majority, "one_coin": best}, best=best, reason="one_coin: lowest BIC")

    used, why = _chosen(choice([0.58, 0.30, 0.45, 0.55, 0.97]))
    assert used is majority and "median rater's accuracy at 0.55, near chance" in why
    used, why = _chosen(choice([0.85, 0.80, 0.90, 0.55, 0.97]))
    assert used.method == "one_coin" and "at least 10" in why
