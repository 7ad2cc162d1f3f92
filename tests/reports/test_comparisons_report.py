"""The report's Comparisons section on simulated comparative studies: Bradley–Terry recovers the
simulation's order of systems, the long CSV it exports reads back through `comparisons` to the
same numbers, and the page, CSV and JSON reports carry it."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.reports.comparisons import comparative_answers, long_rows
from annotation.reports.study import report_csv_rows, study_report
from annotation.simulation.compare_items import SYSTEMS
from annotation.simulation.latent import Knobs, output_quality
from annotation.simulation.study import simulated_study_create

pytestmark = pytest.mark.django_db


def _study(preset: str, n_items: int, n_raters: int):
    return simulated_study_create(preset=preset, slug=f"cmp-{preset}", n_items=n_items, n_raters=n_raters, seed=3,
                                  knobs=Knobs(noise=0.4, position_bias=0.6)).study


def _bt_order(entry: dict) -> list[str]:
    return sorted(entry["systems"], key=lambda s: -entry["systems"][s]["bt"])


def _realised(study, preset: str, seed: int = 3) -> dict[str, float]:
    """Each system's mean true quality over the study's own outputs (the simulation's truth as
    sampled: with 0.7 of per-output spread, close systems swap places in a small study)."""
    from annotation.models import Output

    z: dict[str, list[float]] = {}
    for o in Output.objects.filter(item__study=study, item__is_attention_check=False).select_related("item"):
        z.setdefault(o.system, []).append(output_quality(seed, SYSTEMS[preset][o.system], o.item.external_id, o.position))
    return {s: sum(v) / len(v) for s, v in z.items()}


def _tau(entry: dict, truth: dict[str, float], by: str = "bt") -> float:
    """Kendall's tau between the estimates and the truth, over the pairs of systems whose true
    qualities differ by more than 0.1 (nearly tied systems may come in either order)."""
    systems = sorted(truth)
    est = {s: entry["bws_count"][s] if by == "bws" else entry["systems"][s]["bt"] for s in systems}
    pairs = [(a, b) for a in systems for b in systems if truth[a] - truth[b] > 0.1]
    return sum(1 if est[a] > est[b] else -1 for a, b in pairs) / len(pairs)


def test_pairwise_strengths_follow_the_systems_and_show_the_position_bias():
    study = _study("compare-pairwise", n_items=40, n_raters=12)
    entry = study_report(study, n_boot=50)["comparisons"]["preference"]
    # Every figure it checks stood far from its bound over 60 draws of the study's ids (the order of
    # responses is keyed by them); a failure prints the whole entry.
    shown = json.dumps(entry, sort_keys=True)[:3000]
    assert entry["kind"] == "pairwise" and entry["n_answers"] == 40 * 12, shown
    order = _bt_order(entry)
    assert order[0] == "gpt-4o" and order[-1] == "mistral-7b-instruct", shown
    assert _tau(entry, _realised(study, "compare-pairwise")) > 0.6, shown
    assert abs(sum(v["bt"] for v in entry["systems"].values())) < 1e-8, shown  # centred
    for v in entry["systems"].values():
        assert v["bt_ci"][0] < v["bt"] < v["bt_ci"][1], shown
    # The simulation favours the response shown first (position_bias 0.6): the report says so.
    assert entry["position"]["first_wins"] > 0.5 and entry["position"]["n"] > 0, shown
    rates = entry["win_rates"]
    assert rates["gpt-4o"]["mistral-7b-instruct"] > 0.5, shown
    assert rates["gpt-4o"]["mistral-7b-instruct"] + rates["mistral-7b-instruct"]["gpt-4o"] == pytest.approx(1)


def test_best_worst_and_ranking_enter_as_their_implied_pairs():
    study = _study("compare-ranking", n_items=80, n_raters=6)
    comparisons = study_report(study, n_boot=50)["comparisons"]
    truth = _realised(study, "compare-ranking")
    bws, ranking = comparisons["best_worst"], comparisons["order"]
    assert bws["kind"] == "best_worst" and ranking["kind"] == "ranking"
    # Strengths and counting scores both follow the simulated order of the systems.
    for entry, by in ((bws, "bt"), (bws, "bws"), (ranking, "bt")):
        assert _tau(entry, truth, by) > 0.6, (by, entry["systems"], truth)
    worst = min(truth, key=truth.get)
    assert _bt_order(bws)[-1] == worst and _bt_order(ranking)[-1] == worst
    # Raters of one item rank different tuples: W is averaged over raters who ranked the same outputs.
    w = ranking["kendall_w"]
    assert w["scope"] == "items" and 0 <= w["w"] <= 1 and w["groups"] >= 1
    assert 0 <= bws["position"]["first_best"] <= 1 and bws["position"]["chance"] == pytest.approx(0.25)


@pytest.mark.parametrize("preset,key", [("compare-pairwise", "preference"), ("compare-ranking", "best_worst"),
                                        ("compare-ranking", "order")])
def test_the_long_csv_reads_back_through_the_comparisons_command(tmp_path, preset, key):
    study = _study(preset, n_items=12, n_raters=4)
    header, rows = long_rows(comparative_answers(study), key)
    path = tmp_path / f"{key}.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    out = io.StringIO()
    call_command("comparisons", str(path), "--json", stdout=out)
    from_file = json.loads(out.getvalue())
    in_report = study_report(study, n_boot=20)["comparisons"][key]
    assert from_file["kind"] == in_report["kind"]
    for system, v in in_report["systems"].items():
        assert from_file["systems"][system]["bt"] == pytest.approx(v["bt"], abs=1e-9)
        assert from_file["systems"][system]["n"] == pytest.approx(v["n"])
    if key == "best_worst":
        assert from_file["bws_count"] == pytest.approx(in_report["bws_count"])


def test_report_page_csv_and_json_carry_the_section(client, admin_user):
    study = _study("compare-ranking", n_items=10, n_raters=4)
    client.force_login(admin_user)
    page = client.get(reverse("report", args=[study.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="comparisons"' in html and 'id="plot-comparison-1-strengths"' in html
    plots = client.get(reverse("report", args=[study.slug]), {"fragment": "plots"}).content.decode()
    assert "Strengths best_worst" in plots and "Win rates order" in plots
    data = client.get(reverse("report", args=[study.slug]), {"download": "json"}).json()
    assert set(data["comparisons"]) == {"best_worst", "order"}
    rows = list(report_csv_rows(study_report(study, n_boot=20)))
    names = {(r[0], r[1], r[3]) for r in rows}
    assert ("comparisons", "best_worst", "best_worst_count") in names and ("comparisons", "order", "bradley_terry") in names


def test_the_answers_download_and_the_preference_pairs(client, admin_user, tmp_path):
    study = _study("compare-pairwise", n_items=10, n_raters=6)
    client.force_login(admin_user)
    url = reverse("report", args=[study.slug])
    assert client.get(url, {"download": "comparisons", "criterion": "helpfulness"}).status_code == 400
    response = client.get(url, {"download": "comparisons", "criterion": "preference"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    assert lines[0] == "item,rater,system_a,system_b,winner" and len(lines) == 1 + 10 * 6
    path = tmp_path / "answers.csv"
    path.write_bytes(response.content)
    out = io.StringIO()
    call_command("comparisons", str(path), "--json", stdout=out)
    assert json.loads(out.getvalue())["kind"] == "pairwise"
    # Seed 002's pairs: per item and pair of outputs, the majority side of the raters' judgements.
    body = b"".join(client.get(reverse("dataset-export", args=[study.slug, "pairs"])).streaming_content)
    pairs = [json.loads(line) for line in body.decode().splitlines()]
    assert pairs
    answers = [a for a in comparative_answers(study) if a.criterion == "preference"]
    for p in pairs:
        meta = p["metadata"]
        chosen, rejected = meta["chosen_model"], meta["rejected_model"]
        judged = [a for a in answers if a.item == meta["challenge"] and set(a.shown) == {chosen, rejected}]
        wins = sum(1.0 if a.winner == chosen else 0.5 if a.winner == "tie" else 0.0 for a in judged)
        assert meta["chosen_scores"]["vote_count"] == len(judged) and wins / len(judged) > 0.5
        assert meta["chosen_scores"]["overall"] == pytest.approx(wins / len(judged))
        lo, hi = meta["chosen_scores"]["confidence_interval"]
        assert lo <= wins / len(judged) <= hi
        assert set(p) == {"prompt", "chosen", "rejected", "metadata"} and p["chosen"] != p["rejected"]


def _answer_by_answer(study, key: str) -> dict:
    """The section's entry as the answer-by-answer path computes it (the reference for the bulk sums)."""
    from annotation.reports.comparisons import as_comparisons
    from annotation.stats.comparison_files import comparisons_report

    mine = [a for a in comparative_answers(study, [key]) if a.criterion == key]
    entry = {"n_answers": len(mine), "n_raters": len({a.rater for a in mine}), "n_items": len({a.item_id for a in mine})}
    entry.update(comparisons_report(as_comparisons(mine, "pairwise")))
    return entry


def test_bulk_pairwise_sums_give_the_answer_by_answer_entry_exactly():
    """The section sums pairwise answers in bulk (annotation.reports.pairwise_sums); what it reports
    is what the answers read one by one give, number for number, including answers the reader skips
    (a winner stored as text, a value that is no object) and ignored or attention-check work."""
    from annotation.models import Assignment, Rating
    from annotation.reports.comparisons import comparisons_section

    study = _study("compare-pairwise", n_items=30, n_raters=8)
    ratings = Rating.objects.filter(assignment__study=study, criterion="preference").order_by("id")
    odd_text, odd_list = ratings[0], ratings[1]
    odd_text.value = {**odd_text.value, "winner": str(odd_text.value["shown"][0])}  # text, not the id
    odd_text.save(update_fields=["value"])
    odd_list.value = [1, 2]
    odd_list.save(update_fields=["value"])
    Assignment.objects.filter(pk=ratings[2].assignment_id).update(ignored=True)
    expected = _answer_by_answer(study, "preference")
    got = comparisons_section(study)["preference"]
    assert {k: got[k] for k in expected} == expected
    assert expected["n_answers"] == 30 * 8 - 3 and got["position"]["n"] > 0


def test_pairwise_answers_not_showing_two_outputs_take_the_answer_by_answer_path():
    from annotation.models import Output, Rating
    from annotation.reports.comparisons import comparisons_section
    from annotation.reports.pairwise_sums import pairwise_sums

    study = _study("compare-pairwise", n_items=6, n_raters=4)
    rating = Rating.objects.filter(assignment__study=study, criterion="preference").order_by("id").first()
    third = Output.objects.filter(item__study=study).exclude(pk__in=rating.value["shown"]).first()
    rating.value = {**rating.value, "shown": rating.value["shown"] + [third.pk]}
    rating.save(update_fields=["value"])
    assert pairwise_sums(study, ["preference"]) == {"preference": None}
    expected = _answer_by_answer(study, "preference")
    got = comparisons_section(study)["preference"]
    assert {k: got[k] for k in expected} == expected
