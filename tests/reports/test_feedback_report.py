"""Seed 000's rubric has a criterion keyed `overall`, beside the report's computed overall:
every report and dataset output must keep the two apart (it once answered HTTP 500)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.datasets import export_chunks
from annotation.datasets.releases import release_build, release_path, releases_create
from annotation.reports.study import study_report

pytestmark = pytest.mark.django_db

SIX = ("correctness", "clarity", "tone", "actionability", "coherence", "emotion")


def _criteria_mean(study, item_index: int, position: int) -> float:
    from tests.reports.conftest import feedback_value

    values = [feedback_value(item_index, position, r, k, None) for r in range(3) for k in SIX]
    return sum(values) / len(values)


def test_report_keeps_the_rated_overall_apart_from_the_computed_one(feedback_study):
    report = study_report(feedback_study, n_boot=50)
    row = next(r for r in report["consensus"]["rows"] if r["item"] == "fb-000" and r["output"] == 0)
    assert row["criteria"]["overall"]["consensus"] == 5.0  # what the raters gave as their overall
    assert row["overall"] == pytest.approx(_criteria_mean(feedback_study, 0, 0))  # the six combined
    assert row["vote_count"] == 3
    assert "overall" in report["agreement"]


def test_report_page_and_downloads_answer(feedback_study, client_for, researcher):
    client = client_for(researcher)
    url = reverse("report", args=[feedback_study.slug])
    page = client.get(url)
    assert page.status_code == 200 and b"Overall Rating" in page.content
    as_json = client.get(url, {"download": "json"})
    assert as_json.status_code == 200
    data = json.loads(as_json.content)
    assert data["consensus"]["rows"][0]["criteria"]["overall"]["consensus"] == 5.0
    as_csv = client.get(url, {"download": "csv"})
    assert as_csv.status_code == 200
    rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    fb0 = [r for r in rows if r["section"] == "consensus" and r["subject"].startswith("fb-000#0")]
    rated = [r for r in fb0 if r["criterion"] == "overall" and r["statistic"] == "consensus"]
    computed = [r for r in fb0 if r["statistic"] == "overall"]
    assert [float(r["value"]) for r in rated] == [5.0]
    assert [float(r["value"]) for r in computed] == [pytest.approx(_criteria_mean(feedback_study, 0, 0))]
    standalone = client.get(url, {"download": "html"})
    assert standalone.status_code == 200 and b"<svg" in standalone.content


def test_consensus_export_has_both_overalls(feedback_study):
    text = b"".join(export_chunks(feedback_study, "consensus")).decode()
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["item"] == "fb-000" and r["output"] == "0"]
    by = {(r["level"], r["criterion"]): r for r in rows}
    assert float(by[("criterion", "overall")]["consensus"]) == 5.0
    assert float(by[("overall", "overall")]["consensus"]) == pytest.approx(_criteria_mean(feedback_study, 0, 0))
    assert {k for lvl, k in by if lvl == "criterion"} == set(SIX) | {"overall"}  # confidence: not analysed


def test_pairs_export_ranks_by_the_computed_overall(feedback_study):
    lines = b"".join(export_chunks(feedback_study, "pairs")).decode().splitlines()
    pairs = [json.loads(x) for x in lines]
    assert len(pairs) == 4  # one per item: fb-a beats fb-b by two points
    for p in pairs:
        meta = p["metadata"]
        assert meta["chosen_model"] == "fb-a" and meta["rejected_model"] == "fb-b"
        chosen = meta["chosen_scores"]
        item = int(meta["challenge"].split("-")[1])
        assert chosen["overall"] == pytest.approx(_criteria_mean(feedback_study, item, 0))
        assert set(SIX) <= set(chosen)
        assert meta["score_difference"] == pytest.approx(chosen["overall"] - meta["rejected_scores"]["overall"])


def test_a_release_of_every_format_builds(feedback_study, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    made = releases_create(study=feedback_study, version="0.1.0",
                           formats=["csv", "jsonl", "parquet", "pairs", "consensus"])
    for r in made:
        built = release_build(release_id=r.pk)
        assert built.status == "ready", r.format
        assert release_path(built).stat().st_size > 0
