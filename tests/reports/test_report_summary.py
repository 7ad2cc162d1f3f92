"""Issue 25 §1: the report answers first: a summary at the top of the page and of the HTML, JSON and
CSV downloads (reliability verdicts, ranking with Holm-significant differences, next steps), a table
of contents and collapsible sections, and each plot's data as a table."""

from __future__ import annotations

import csv
import io
import json
import re
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse
from scipy.stats import wilcoxon
from statsmodels.stats.multitest import multipletests

from annotation.labels import RELIABILITY_VERDICTS
from annotation.reports.summary import report_summary, verdict
from annotation.stats.icc import icc, raters_for_reliability
from annotation.stats.ranking import compare_systems


@pytest.mark.parametrize("value,ci,code", [
    (0.80, [0.72, 0.88], "reliable"), (0.75, [0.60, 0.85], "uncertain"), (0.65, [0.55, 0.71], "uncertain"),
    (0.50, [0.30, 0.69], "not reliable"), (None, None, "undefined"), (0.71, None, "reliable"), (0.69, None, "not reliable"),
])
def test_verdict_against_the_threshold(value, ci, code):
    assert verdict(value, ci, 0.70)[0] == code


@pytest.mark.parametrize("rho,target", [(0.3, 0.7), (0.5, 0.7), (0.615, 0.7), (0.2, 0.9), (0.75, 0.7)])
def test_raters_for_reliability_is_the_smallest_k_whose_mean_reaches_the_target(rho, target):
    k = raters_for_reliability(rho, target)

    def sb(n):  # Spearman–Brown: reliability of the mean of n raters
        return n * rho / (1 + (n - 1) * rho)

    assert sb(k) >= target - 1e-12 and (k == 1 or sb(k - 1) < target)
    assert raters_for_reliability(0.0, 0.7) is None and raters_for_reliability(-0.1, 0.7) is None


def test_spearman_brown_matches_icc1k_of_real_ratings():
    """ICC1k of k raters is what Spearman–Brown predicts from ICC1 (one-way model), so k from the
    prophecy is the raters the mean needs."""
    rng = np.random.default_rng(5)
    truth = rng.normal(0, 1, 200)
    mat = truth[:, None] + rng.normal(0, 1.2, (200, 4))
    stats = icc(mat)
    rho, k = stats["ICC1"].value, 4
    assert stats["ICC1k"].value == pytest.approx(k * rho / (1 + (k - 1) * rho), rel=1e-9)


def _systems_report(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rows = []
    effects = {"a": 0.9, "b": 0.5, "c": 0.45, "d": 0.0}
    for item in range(40):
        base = rng.normal(4, 1)
        for s, e in effects.items():
            rows.append({"item": item, "system": s, "criterion": "q", "score": base + e + rng.normal(0, 0.8)})
    comp = compare_systems(pd.DataFrame(rows))
    return {"criteria": [{"key": "q", "name": "Quality", "measure": "numeric", "min": 1, "max": 7}],
            "systems": {"criteria": comp["criteria"]}, "settings": {"icc_threshold": 0.7},
            "study": {"raters_per_item": 3}}, pd.DataFrame(rows)


def test_ranking_names_the_differences_holm_keeps_significant():
    report, frame = _systems_report()
    summary = report_summary(report)
    [rank] = summary["ranking"]
    wide = frame.pivot_table(index="item", columns="system", values="score")
    pairs = list(combinations(sorted(wide.columns), 2))
    raw = [wilcoxon(wide[a], wide[b]).pvalue for a, b in pairs]
    reject, adjusted, _, _ = multipletests(raw, alpha=0.05, method="holm")
    expected = {frozenset(p) for p, r in zip(pairs, reject) if r}
    got = {frozenset((e["better"], e["worse"])) for e in rank["significant"]}
    assert got == expected and 0 < len(got) < len(pairs)  # some pairs are, some are not
    by_pair = {frozenset(p): adj for p, adj in zip(pairs, adjusted)}
    for e in rank["significant"] + rank["not_significant"]:
        assert e["p_holm"] == pytest.approx(by_pair[frozenset((e["better"], e["worse"]))])
    means = {s["system"]: s["mean"] for s in rank["ranking"]}
    assert all(means[e["better"]] >= means[e["worse"]] for e in rank["significant"])
    assert [s["system"] for s in rank["ranking"]] == sorted(means, key=lambda s: -means[s])




@pytest.mark.django_db
def test_summary_tops_the_page_and_every_download(rated_study, client_for, researcher):
    c = client_for(researcher)
    url = reverse("report", args=[rated_study.slug])
    html = c.get(url).content.decode()
    # the summary comes first, after the table of contents, before every section
    toc, answers, agreement = (html.index('class="card report-toc"'), html.index('id="answers"'),
                               html.index('id="agreement"'))
    assert toc < answers < agreement
    for anchor in ("answers", "answer-reliability", "answer-ranking", "answer-judges", "answer-next", "agreement",
                   "systems", "raters", "consensus"):
        assert f'href="#{anchor}"' in html and f'id="{anchor}"' in html
    assert html.count("<details open><summary><h2>") >= 5  # each section collapsible
    assert "This plot's data as a table" in html

    data = json.loads(c.get(url, {"download": "json"}).content)
    assert list(data)[0] == "summary"
    summary = data["summary"]
    agreement = data["agreement"]
    for row in summary["reliability"]:
        a = agreement[row["criterion"]]
        basis = a["icc1"] if row["statistic"] == "ICC1" else a["alpha"]
        assert row["verdict"] == verdict(basis["value"], basis.get("bootstrap_ci") or basis.get("ci"), 0.7)[0]
    assert {r["criterion"] for r in summary["ranking"]} == set(data["systems"]["criteria"])
    assert summary["next"]["more_raters"]["raters_per_item"] == rated_study.raters_per_item
    assert summary["judges"] == {}  # no judge run: the judges app adds no part

    rows = list(csv.reader(io.StringIO(c.get(url, {"download": "csv"}).content.decode())))
    assert rows[0][0] == "section" and rows[1][0] == "summary"
    first_other = next(i for i, r in enumerate(rows[1:], 1) if r[0] != "summary")
    assert all(r[0] != "summary" for r in rows[first_other:])
    verdicts = {r[1]: r[4] for r in rows if r[0] == "summary" and r[3].startswith("reliability_")}
    assert verdicts == {r["criterion"]: r["verdict"] for r in summary["reliability"]}

    standalone = c.get(url, {"download": "html"}).content.decode()
    assert standalone.index('id="answers"') < standalone.index('id="agreement"')
    # one vocabulary: the page and the HTML download print the very words the JSON and CSV carry
    for page in (html, standalone):
        shown = re.findall(r'<span class="verdict verdict-[a-z-]+">([^<]+)</span>', page)
        assert shown == [r["verdict"] for r in summary["reliability"]]
    assert {r["verdict"] for r in summary["reliability"]} <= set(RELIABILITY_VERDICTS)
    assert "Are the ratings reliable?" in standalone
