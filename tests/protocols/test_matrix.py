"""Every seed preset × every output of a study, on simulated data: each answers 200, is not empty
and agrees with the others (issue 10 §2).

Outputs checked per preset (CHECKS below; 5 presets × 11 outputs = 55 checks): the report page,
its CSV and JSON downloads (α in the JSON equals `agreement` on the exported ratings CSV, and the
CSV's α equals the JSON's), the five export formats (csv, jsonl, parquet, pairs, consensus; the
ratings formats hold the same rows as the database), the built release, the judge-vs-human
section (and the judges page), and the gold page (graded tables where the preset has gold labels).
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.datasets import FORMATS
from annotation.models import DatasetRelease, Output, Rating
from annotation.simulation.items import PRESETS
from judges.models import JudgeRun
from tests.protocols.conftest import csv_rows

pytestmark = pytest.mark.django_db

CHECKS = ["report_page", "report_csv", "report_json", "export_csv", "export_jsonl", "export_parquet",
          "export_pairs", "export_consensus", "release", "judges_vs_humans", "gold"]
# A preset has preference pairs when its items have several outputs and a numeric overall.
SINGLE_OUTPUT = {"aqua-003"}
GOLD_LABELS = {"aqua-003": "label", "rrgen-001": "decision"}


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _get(client: Client, url: str, **params) -> bytes:
    response = client.get(url, params)
    assert response.status_code == 200, (url, params, response.status_code)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body.strip(), f"{url} {params} is empty"
    return body


def _report(client, study) -> dict:
    return json.loads(_get(client, reverse("report", args=[study.slug]), download="json"))


def _export(client, study, fmt: str) -> bytes:
    return _get(client, reverse("dataset-export", args=[study.slug, fmt]))


def _n_ratings(study) -> int:
    """Rows of the long ratings export: every rating, and once each submitted assignment without
    ratings (an item the rater ignored, with the reason)."""
    from annotation.models import Assignment

    ratings = Rating.objects.filter(assignment__study=study).count()
    unrated = Assignment.objects.filter(study=study, status="submitted", ratings__isnull=True).count()
    return ratings + unrated


def _agreement_on_export(client, study, tmp_path) -> dict:
    """`agreement --json` on the exported ratings: one unit per (item, output); labels as codes."""
    rows = csv_rows(_export(client, study, "csv"))
    codes: dict[str, dict[str, int]] = {}
    lines = ["item,rater,criterion,score"]
    for r in rows:
        if r["ignored"] == "t" or r["ignored"] == "true" or not r["value"]:
            continue
        score = r["score"]
        if score == "":
            if r["criterion_kind"] not in ("choice", "binary"):
                continue  # highlights, text: no agreement statistic
            table = codes.setdefault(r["criterion"], {})
            score = str(table.setdefault(r["value"], len(table)))
        lines.append(f"{r['item']}#{r['output']},{r['rater']},{r['criterion']},{score}")
    path = tmp_path / f"{study.slug}.csv"
    path.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    call_command("agreement", str(path), "--json", stdout=out)
    return json.loads(out.getvalue())["criteria"]


def check_report_page(client, study, preset, tmp_path):
    html = _get(client, reverse("report", args=[study.slug])).decode()
    report = _report(client, study)
    assert report["agreement"], "the report has no agreement section"
    for c in report["criteria"] if isinstance(report["criteria"], list) else []:
        assert c.get("name", "") in html
    assert 'hx-get="?fragment=plots' in html  # the report's plots come in a second request
    plots = _get(client, reverse("report", args=[study.slug]), fragment="plots").decode()
    assert "<svg" in plots  # the plots
    assert "Judges vs humans" in html


def check_report_csv(client, study, preset, tmp_path):
    rows = csv_rows(_get(client, reverse("report", args=[study.slug]), download="csv"))
    report = _report(client, study)
    assert len(rows) > 10
    for key, a in report["agreement"].items():
        value = a["alpha"]["value"]
        if value is None:
            continue
        found = [r for r in rows if r["section"] == "agreement" and r["criterion"] == key
                 and "alpha" in r["statistic"].lower()]
        assert found, f"no alpha row for {key} in the report CSV"
        assert float(found[0]["value"]) == pytest.approx(value), key


def check_report_json(client, study, preset, tmp_path):
    report = _report(client, study)
    computed = _agreement_on_export(client, study, tmp_path)
    compared = 0
    for key, a in report["agreement"].items():
        value = a["alpha"]["value"]
        if value is None:
            continue
        other = computed[key]["krippendorff_alpha"][a["alpha_level"]]
        assert other == pytest.approx(value, abs=1e-9), (key, a["alpha_level"], value, other)
        assert a["n_units"] == computed[key]["n_items"], key
        compared += 1
    assert compared >= 1


def check_export_csv(client, study, preset, tmp_path):
    rows = csv_rows(_export(client, study, "csv"))
    assert len(rows) == _n_ratings(study) > 0
    assert {"item", "output", "rater", "criterion", "value"} <= set(rows[0])


def _keys(rows) -> Counter:
    def text(v) -> str:  # CSV writes an absent value as "", JSONL and Parquet as null
        return "" if v is None else str(v)

    return Counter(tuple(text(r[k]) for k in ("item", "output", "rater", "criterion")) for r in rows)


def check_export_jsonl(client, study, preset, tmp_path):
    rows = [json.loads(line) for line in _export(client, study, "jsonl").splitlines() if line.strip()]
    assert len(rows) == _n_ratings(study)
    assert _keys(rows) == _keys(csv_rows(_export(client, study, "csv")))


def check_export_parquet(client, study, preset, tmp_path):
    table = pq.read_table(io.BytesIO(_export(client, study, "parquet")))
    assert table.num_rows == _n_ratings(study)
    assert _keys(table.to_pylist()) == _keys(csv_rows(_export(client, study, "csv")))


def check_export_pairs(client, study, preset, tmp_path):
    response = client.get(reverse("dataset-export", args=[study.slug, "pairs"]))
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    pairs = [json.loads(line) for line in body.splitlines() if line.strip()]
    if preset in SINGLE_OUTPUT:
        assert pairs == []  # one output per item: nothing to pair
        return
    assert pairs, "no preference pairs"
    for p in pairs:
        assert p["chosen"] != p["rejected"]
        assert p["metadata"]["score_difference"] >= 0.5
        assert p["metadata"]["chosen_model"] != p["metadata"]["rejected_model"]


def check_export_consensus(client, study, preset, tmp_path):
    rows = csv_rows(_export(client, study, "consensus"))  # long: one row per output and criterion/overall
    rated = Rating.objects.filter(assignment__study=study).exclude(output=None).values("output").distinct().count()
    assert len({(r["item"], r["output"]) for r in rows}) == rated > 0
    assert {r["level"] for r in rows} >= {"criterion"}


def check_release(client, study, preset, tmp_path):
    releases = DatasetRelease.objects.filter(study=study, version="1.0.0")
    # the fixture asks for every format (conftest: formats=list(FORMATS))
    assert sorted(r.format for r in releases) == sorted(FORMATS) and {r.status for r in releases} == {"ready"}, [
        (r.format, r.status, r.error) for r in releases]
    csv_release = releases.get(format="csv")
    body = _get(client, reverse("release-download", args=[study.slug, csv_release.pk]))
    assert len(csv_rows(body)) == _n_ratings(study)
    for release in releases:
        if release.format == "pairs" and preset in SINGLE_OUTPUT:
            continue  # nothing to pair; the (empty) file was still built, checked above
        assert _get(client, reverse("release-download", args=[study.slug, release.pk]))


def check_judges_vs_humans(client, study, preset, tmp_path):
    runs = list(JudgeRun.objects.filter(study=study))
    assert len(runs) == 2 and all(r.status == "done" and r.n_scored > 0 for r in runs)
    section = _report(client, study)["sections"]["Judges vs humans"]
    assert {r["judge"] for r in section["runs"]} == {r.name for r in runs}
    judged = [j for c in section["criteria"].values() for j in c.get("judges", {}).values()]
    assert judged, "no criterion compares judges with humans"
    page = _get(client, reverse("judges:study", args=[study.slug])).decode()
    for run in runs:
        assert run.name in page


def check_gold(client, study, preset, tmp_path):
    url = reverse("judges:gold", args=[study.slug])
    page = _get(client, url).decode()
    key = GOLD_LABELS.get(preset)
    if key is None:
        return  # no label criterion: the page says so
    runs = JudgeRun.objects.filter(study=study)
    for run in runs:
        assert run.name in page
    # The same table from an uploaded gold file (ids: item, or item#position for several outputs).
    n_out = Counter(Output.objects.filter(item__study=study).values_list("item_id", flat=True))
    lines = ["id,label"]
    for o in Output.objects.filter(item__study=study).select_related("item"):
        gold = o.item.gold[key]
        label = gold[o.position] if isinstance(gold, list) else gold
        ident = o.item.external_id if n_out[o.item_id] == 1 else f"{o.item.external_id}#{o.position}"
        lines.append(f"{ident},{label}")
    upload = io.BytesIO(("\n".join(lines) + "\n").encode())
    upload.name = "gold.csv"
    response = client.post(url, {"gold": upload, "criterion": key})
    assert response.status_code == 200
    from_items = [m for m in page.split() if "%" in m or "0." in m]
    from_file = [m for m in response.content.decode().split() if "%" in m or "0." in m]
    assert from_items and from_items == from_file


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("preset", PRESETS)
def test_preset_output(simulated, preset, check, tmp_path):
    study, researcher, admin = simulated[preset]
    client = _client(researcher)
    globals()[f"check_{check}"](client, study, preset, tmp_path)


def test_the_matrix_counts_every_preset_and_output():
    assert len(PRESETS) * len(CHECKS) == 55
    assert math.prod([len(PRESETS), len(CHECKS)]) == 55


def test_simulated_raters_use_every_control_of_the_preset(simulated):
    """Accept/reject, highlights, ignore with a reason, confidence, reasoning and comments all occur."""
    from annotation.models import Assignment

    def values(preset, key):
        return list(Rating.objects.filter(assignment__study=simulated[preset][0], criterion=key)
                    .values_list("value", flat=True))

    assert {"ACCEPT", "REJECT"} <= set(values("rrgen-001", "decision"))
    spans = [s for v in values("rrgen-001", "highlights") for s in v]
    assert spans and all(s["label"] == "relevant" and s["text"] for s in spans)
    ignored = Assignment.objects.filter(study=simulated["rrgen-001"][0], ignored=True)
    assert ignored.exists() and all(a.ignore_reason for a in ignored)
    assert len(set(values("feedback-000", "confidence"))) >= 2
    feedback = Rating.objects.filter(assignment__study=simulated["feedback-000"][0], criterion="correctness")
    assert feedback.exists() and not feedback.filter(reasoning="").exists()  # reasoning is required there
    assert Assignment.objects.filter(study=simulated["codegen-002"][0]).exclude(comment="").exists()
    assert len(set(values("aqua-003", "label"))) >= 2


def test_judges_answer_in_the_presets_own_format(simulated):
    """Seed 000: the score block; 001/002: one JSON per output; 003: label JSON; 004: the score on the
    first line, or seed 004's {"score":"…","reason":"…"} for the evidence dimension."""
    from judges.models import JudgeScore
    from judges.simulation import MALFORMED

    def raw(preset, criterion):
        scores = JudgeScore.objects.filter(run__study=simulated[preset][0], criterion=criterion, status="scored")
        texts = [s.raw_text for s in scores if s.raw_text != MALFORMED]
        assert texts, (preset, criterion)
        return texts

    assert all("- **Overall Rating**: " in t and "**Reasoning:**" in t for t in raw("feedback-000", "overall"))
    for preset, key in (("rrgen-001", "decision"), ("codegen-002", "technical_quality")):
        assert all(key in json.loads(t) for t in raw(preset, key))
    assert all(set(json.loads(t)) == {"label", "reason"} for t in raw("aqua-003", "label"))
    assert all(isinstance(json.loads(t)["score"], str) for t in raw("fulltext-004", "evidence"))
    assert all(t.split("\n")[0].strip().isdigit() for t in raw("fulltext-004", "structure"))
