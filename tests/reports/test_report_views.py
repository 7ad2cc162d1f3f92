"""The study report over HTTP: who may read it, and that its numbers are the statistics'."""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape

import numpy as np
import pandas as pd
import pytest
from django.template import Template
from django.urls import reverse

from annotation.models import Rating
from annotation.stats.icc import icc
from annotation.stats.krippendorff import krippendorff_alpha
from annotation.stats.ranking import compare_systems
from annotation.stats.rater_quality import rater_quality
from tests.reports.conftest import N_ITEMS, rrgen_value
from tests.reports.factories import items_jsonl, rate_study

pytestmark = pytest.mark.django_db


def orm_frame(study) -> pd.DataFrame:
    """Ratings rebuilt from ORM objects, independently of the report's SQL."""
    rows = [{"item": r.assignment.item.external_id, "output": r.output.position, "system": r.output.system,
             "rater": r.assignment.rater.username, "criterion": r.criterion, "value": r.value,
             "shown": r.assignment.permutation.index(r.output.position) + 1}
            for r in Rating.objects.filter(assignment__study=study, output__isnull=False)
            .select_related("assignment__item", "assignment__rater", "output")]
    return pd.DataFrame(rows)


def report_json(client, study, **params):
    response = client.get(reverse("report", args=[study.slug]), {"download": "json", **params})
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith('.json"')
    return json.loads(response.content)


@pytest.mark.parametrize("query", ["", "download=html", "download=csv", "download=json", "fragment=plots"])
def test_only_admins_and_researchers_reach_the_report(rated_study, raters, researcher, admin_user, outsider,
                                                      client_for, client, query):
    url = reverse("report", args=[rated_study.slug]) + (f"?{query}" if query else "")
    assert client_for(admin_user).get(url).status_code == 200
    assert client_for(researcher).get(url).status_code == 200
    assert client_for(raters[0]).get(url).status_code == 404  # an annotator of this very study
    assert client_for(outsider).get(url).status_code == 404
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_plots_asked_for_when_the_report_has_gone_reload_the_page(rated_study, researcher, client_for, monkeypatch):
    """A report no longer there when the page's second request comes (evicted, or computing again): the whole
    page is shown again (its pending page, with the progress bar), not swapped into the report's place."""
    from annotation.reports import downloads
    from annotation.reports.pending import ReportFailed, ReportPending

    c = client_for(researcher)
    url = reverse("report", args=[rated_study.slug])
    for gone in (ReportPending(queued_at=0, expected_s=30), ReportFailed("the worker stopped")):
        def raising(*args, **kwargs):
            raise gone

        monkeypatch.setattr(downloads, "report_with_sections", raising)
        response = c.get(url, {"fragment": "plots"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 204 and response["HX-Refresh"] == "true" and not response.content


def test_researcher_of_another_study_gets_404(rated_study, make_study, client_for, db):
    from tests.conftest import make_user

    other_reader = make_user("reader-elsewhere")
    make_study("codegen-002", researchers=[other_reader])
    assert client_for(other_reader).get(reverse("report", args=[rated_study.slug])).status_code == 404


def test_agreement_equals_the_statistics_on_the_same_ratings(rated_study, researcher, client_for):
    report = report_json(client_for(researcher), rated_study)
    df = orm_frame(rated_study)
    for key in ("semantic_relevance", "fluency"):
        sub = df[df.criterion == key]
        wide = sub.pivot_table(index=["item", "output"], columns="rater", values="value", aggfunc="first")
        mat = wide.to_numpy(float)
        a = report["agreement"][key]
        assert a["alpha"]["value"] == pytest.approx(krippendorff_alpha(mat, "interval").value, abs=1e-12)
        complete = mat[~np.isnan(mat).any(axis=1)]  # all three raters: the slot matrix here
        assert a["icc1"]["value"] == pytest.approx(icc(complete)["ICC1"].value, abs=1e-12)
        assert a["icc1"]["k"] == 3 and a["icc1"]["n_units"] == len(complete)
        lo, hi = a["alpha"]["bootstrap_ci"]
        assert lo <= a["alpha"]["value"] <= hi
        assert a["n_units"] == N_ITEMS * 3
    decision = report["agreement"]["decision"]
    sub = df[df.criterion == "decision"]
    wide = sub.assign(code=sub["value"].map({"ACCEPT": 0.0, "REJECT": 1.0})).pivot_table(
        index=["item", "output"], columns="rater", values="code", aggfunc="first")
    assert decision["alpha_level"] == "nominal"
    assert decision["alpha"]["value"] == pytest.approx(krippendorff_alpha(wide.to_numpy(float), "nominal").value)
    assert decision["icc1"]["value"] is None and "numeric" in decision["icc1"]["reason"]


def test_threshold_sets_the_acceptance_flag(rated_study, researcher, client_for):
    c = client_for(researcher)
    icc1 = report_json(c, rated_study)["agreement"]["fluency"]["icc1"]["value"]
    assert report_json(c, rated_study)["settings"]["icc_threshold"] == 0.70
    assert report_json(c, rated_study, icc_threshold=str(icc1 - 0.01))["agreement"]["fluency"]["accepted"] is True
    assert report_json(c, rated_study, icc_threshold=str(min(icc1 + 0.01, 1)))["agreement"]["fluency"]["accepted"] is False
    assert report_json(c, rated_study)["agreement"]["decision"]["accepted"] is None
    url = reverse("report", args=[rated_study.slug])
    assert c.get(url, {"download": "json", "icc_threshold": "abc"}).status_code == 400
    assert c.get(url, {"download": "csv", "icc_threshold": "1.5"}).status_code == 400
    page = c.get(url, {"icc_threshold": "abc"})
    assert page.status_code == 200 and "icc_threshold: give a number" in page.content.decode()


def test_systems_and_raters_equal_the_statistics(rated_study, researcher, client_for):
    report = report_json(client_for(researcher), rated_study)
    df = orm_frame(rated_study)
    numeric = df[df.criterion.isin(["semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy"])]
    ref = compare_systems(numeric.rename(columns={"value": "score"})[["item", "system", "criterion", "score"]])
    for key, comp in ref["criteria"].items():
        ours = report["systems"]["criteria"][key]
        assert ours["ranking"] == comp["ranking"] == ["sys-a", "sys-b", "sys-c"]
        for system, s in comp["systems"].items():
            assert ours["systems"][system]["mean"] == pytest.approx(s["mean"])
            assert ours["systems"][system]["ci"] == pytest.approx(s["ci"])
        for p_ours, p_ref in zip(ours["pairs"], comp["pairs"]):
            assert p_ours["win_a"] == pytest.approx(p_ref["win_a"])
            assert p_ours["p_holm"] == pytest.approx(p_ref["p_holm"])
    decisions = df[df.criterion == "decision"]
    accept = report["systems"]["accept_rate"]["decision"]["systems"]
    for system, g in decisions.groupby("system"):
        assert accept[system] == pytest.approx((g["value"] == "ACCEPT").mean())
    units = numeric["item"] + "#" + numeric["output"].astype(str) + "#" + numeric["criterion"]
    rq = rater_quality(pd.DataFrame({"unit": units, "rater": numeric["rater"], "score": numeric["value"].astype(float),
                                     "position": numeric["shown"]}))
    for rater, info in rq.items():
        assert report["raters"][rater]["bias"] == pytest.approx(info["bias"])
        assert report["raters"][rater]["pearson_vs_others"] == pytest.approx(info["pearson_vs_others"])
    assert report["raters"]["r2"]["bias"] < 0 < report["raters"]["r0"]["bias"]  # r2 is the harsh one
    assert report["raters"]["r1"]["n_items"] == N_ITEMS - 1  # one ignored


def test_consensus_rows_are_the_means_with_the_seed_ci(rated_study, researcher, client_for):
    report = report_json(client_for(researcher), rated_study)
    df = orm_frame(rated_study)
    row = report["consensus"]["rows"][0]
    scores = df[(df["item"] == row["item"]) & (df["output"] == row["output"]) & (df.criterion == "fluency")]["value"]
    s = np.asarray(scores, float)
    c = row["criteria"]["fluency"]
    assert c["consensus"] == pytest.approx(s.mean())
    half = 1.959963984540054 * s.std(ddof=1) / np.sqrt(s.size)
    assert c["ci"] == pytest.approx([s.mean() - half, s.mean() + half])
    assert row["vote_count"] == 3 and row["system"] == "sys-a"
    assert report["consensus"]["n_outputs"] == N_ITEMS * 3


def test_undefined_statistics_say_why(make_study, raters, researcher, client_for):
    """One rater: no agreement can be computed; the page says undefined, the JSON has null + reason."""
    study = make_study("rrgen-001", annotators=raters[:1], researchers=[researcher], items_text=items_jsonl(4))
    rate_study(study, raters[:1], rrgen_value)
    c = client_for(researcher)
    report = report_json(c, study)
    a = report["agreement"]["fluency"]
    assert a["alpha"]["value"] is None and a["alpha"]["reason"]
    assert a["icc1"]["value"] is None and "two or more ratings" in a["icc1"]["reason"]
    assert a["accepted"] is None
    assert report["raters"]["r0"]["bias"] is None and report["raters"]["r0"]["reasons"]["bias"]
    html = c.get(reverse("report", args=[study.slug])).content.decode()
    assert "undefined" in html and "no unit has two or more ratings" in html
    assert "NaN" not in html and ">nan<" not in html
    rows = list(csv.reader(io.StringIO(c.get(reverse("report", args=[study.slug]),
                                             {"download": "csv"}).content.decode())))
    icc_row = next(r for r in rows if r[:4] == ["agreement", "fluency", "", "icc1"])
    assert icc_row[4] == "" and "two or more ratings" in icc_row[7]


def test_empty_study_report_renders(make_study, researcher, client_for):
    study = make_study("codegen-002", researchers=[researcher])
    response = client_for(researcher).get(reverse("report", args=[study.slug]))
    assert response.status_code == 200
    assert "No submitted ratings yet" in response.content.decode()


def test_page_shows_plots_and_the_standalone_file_has_no_external_assets(rated_study, researcher, client_for):
    """The page answers with a placeholder for each plot and asks for the plots once shown (one request, each
    plot in place of its placeholder); the downloaded report has them inline."""
    c = client_for(researcher)
    page = c.get(reverse("report", args=[rated_study.slug])).content.decode()
    assert "<svg" not in page
    placeholders = re.findall(r'<div class="plot" id="(plot-[a-z0-9-]+)" aria-busy="true">', page)
    assert len(placeholders) >= 5 and len(set(placeholders)) == len(placeholders)
    asked = re.search(r'<div id="report-plots" hx-get="([^"]+)" hx-trigger="load" hx-swap="outerHTML">', page)
    assert asked, "the page does not ask for its plots"
    fragment = c.get(reverse("report", args=[rated_study.slug]) + unescape(asked.group(1)),
                     HTTP_HX_REQUEST="true").content.decode()
    swapped = re.findall(r'<div class="plot" id="(plot-[a-z0-9-]+)" hx-swap-oob="true">(<svg)?', fragment)
    assert [name for name, _ in swapped] == placeholders  # each placeholder filled or emptied, nothing else
    assert sum(1 for _, svg in swapped if svg) >= 5 and fragment.count("<svg") >= 5
    assert '<div id="report-plots" data-drawn>' in fragment
    standalone = c.get(reverse("report", args=[rated_study.slug]), {"download": "html"})
    assert standalone["Content-Disposition"] == f'attachment; filename="{rated_study.slug}-report.html"'
    html = standalone.content.decode()
    assert html.count("<svg") >= 5 and "<style>" in html
    for external in ("<script", "<link", 'src="', "url(http", "href=\"/"):
        assert external not in html


def test_csv_download_matches_json(rated_study, researcher, client_for):
    c = client_for(researcher)
    report = report_json(c, rated_study)
    response = c.get(reverse("report", args=[rated_study.slug]), {"download": "csv"})
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["section", "criterion", "subject", "statistic", "value", "ci_low", "ci_high", "reason"]
    alpha = next(r for r in rows if r[:4] == ["agreement", "fluency", "", "krippendorff_alpha_interval"])
    assert float(alpha[4]) == pytest.approx(report["agreement"]["fluency"]["alpha"]["value"])
    assert [float(alpha[5]), float(alpha[6])] == pytest.approx(report["agreement"]["fluency"]["alpha"]["bootstrap_ci"])


def judges_section(study, report):
    return {"title": "Judges vs humans", "template": Template("<p id='extra'>{{ section.note }} {{ section.n }}</p>"),
            "context": {"note": "hooked", "n": len(report["agreement"])}, "data": {"n": 1}}


def test_other_apps_add_sections_through_the_setting(rated_study, researcher, client_for, settings):
    settings.REPORT_SECTIONS = ["tests.reports.test_report_views.judges_section"]
    c = client_for(researcher)
    html = c.get(reverse("report", args=[rated_study.slug])).content.decode()
    assert "Judges vs humans" in html and "<p id='extra'>hooked 5</p>" in html
    assert report_json(c, rated_study)["sections"] == {"Judges vs humans": {"n": 1}}


def _methods_widgets(client, study) -> str:
    import re

    html = client.get(reverse("report", args=[study.slug])).content.decode()
    paragraph = re.search(r'<p class="muted" id="methods-widgets">(.*?)</p>', html, re.S).group(1)
    return " ".join(paragraph.split())


def test_the_methods_name_each_scale_shown_or_say_there_was_none(rated_study, make_study, researcher, client_for):
    client = client_for(researcher)
    scales = _methods_widgets(client, rated_study)
    assert scales.startswith("Scales shown to raters (rubric rrgen-001 v")
    assert "(1–7) as buttons or a number box" in scales and not scales.endswith("; .")
    labels_only = make_study("aqua-003", researchers=[researcher])  # one criterion, a choice of labels
    assert _methods_widgets(client, labels_only) == (
        "Rubric aqua-003 v1 shows raters no scale (no Likert, numeric or confidence criterion).")
