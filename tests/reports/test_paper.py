"""Paper-ready output: tables as LaTeX (booktabs) and Markdown, figures as SVG/PDF/300-dpi PNG, the methods paragraph."""

from __future__ import annotations

import io
import os
import struct
import zipfile

import pytest
from django.urls import reverse

from annotation.reports.downloads import report_with_sections
from annotation.reports.methods import methods_paragraph
from annotation.reports.paper import report_tables, study_paper_files, table_latex, table_markdown
from annotation.simulation.study import simulated_study_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(researcher):
    sim = simulated_study_create(preset="rrgen-001", slug="paper-rrgen", n_items=6, n_raters=3, seed=2)
    from annotation.services.studies import study_members_add

    study_members_add(study=sim.study, usernames=[researcher.username], role="researcher")
    return sim.study


def _png_dpi(data: bytes) -> float:
    """Pixels per inch from the PNG's pHYs chunk (pixels per metre)."""
    at = data.index(b"pHYs")
    x, _, unit = struct.unpack(">IIB", data[at + 4:at + 13])
    assert unit == 1
    return x * 0.0254


def test_every_table_in_latex_booktabs_and_markdown_with_the_reports_numbers(study):
    report, _ = report_with_sections(study)
    tables = {t.name: t for t in report_tables(report)}
    assert {"agreement", "systems", "raters", "positions", "accept_rate"} <= set(tables)
    latex = table_latex(tables["agreement"], study.slug)
    assert all(rule in latex for rule in (r"\toprule", r"\midrule", r"\bottomrule", r"\caption{", r"\label{tab:"))
    fluency = report["agreement"]["fluency"]["alpha"]["value"]
    assert f"{fluency:.3f}" in latex and f"{fluency:.3f}" in table_markdown(tables["agreement"])
    assert latex.count(r"\\") == len(tables["agreement"].frame) + 1  # header and one row per criterion
    md = table_markdown(tables["systems"])
    systems = report["systems"]["criteria"]["fluency"]["systems"]
    assert all(f"{s['mean']:.3f}" in md for s in systems.values())
    assert "_" not in latex.replace(r"\_", "")  # LaTeX specials escaped
    assert r"$\alpha$ 95\% CI" in latex and "α" not in latex and "—" not in latex


def test_the_kit_has_each_figure_in_three_formats_and_the_png_at_300_dpi(study, researcher, outsider, annotator,
                                                                       client_for):
    files = study_paper_files(study)
    figures = {p.rsplit(".", 1)[0] for p in files if p.startswith("figures/")}
    assert len(figures) >= 4
    for fig in figures:
        assert files[f"{fig}.svg"].lstrip().startswith(b"<?xml") or b"<svg" in files[f"{fig}.svg"][:500]
        assert files[f"{fig}.pdf"].startswith(b"%PDF")
        assert _png_dpi(files[f"{fig}.png"]) == pytest.approx(300, abs=0.1)

    url = reverse("report-paper", args=[study.slug])
    response = client_for(researcher).get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    kit = zipfile.ZipFile(io.BytesIO(response.content))
    assert "methods.md" in kit.namelist() and "tables/agreement.tex" in kit.namelist()
    # drawn again for the download: the same report gives the same bytes
    assert {name: kit.read(name) for name in kit.namelist()} == files
    for name in ("tables/agreement.tex", "methods.tex", sorted(figures)[0] + ".png"):  # one file, drawn alone
        one = client_for(researcher).get(reverse("report-paper-file", args=[study.slug, name]))
        assert one.status_code == 200 and one.content == files[name], name
    assert study_paper_files(study, only="figures/nope.svg") == {}
    assert client_for(researcher).get(reverse("report-paper-file", args=[study.slug, "nope.tex"])).status_code == 404
    for user in (outsider, annotator):
        assert client_for(user).get(url).status_code == 404
        assert client_for(user).get(reverse("report-paper-file", args=[study.slug, "methods.md"])).status_code == 404
    page = client_for(researcher).get(reverse("report", args=[study.slug])).content.decode()
    assert url in page


def test_the_methods_paragraph_states_the_design_and_the_numbers(study):
    report, _ = report_with_sections(study)
    text = methods_paragraph(study, report)
    counts = report["counts"]
    assert f"on {counts['items']} items" in text and f"{counts['raters']} raters gave {counts['ratings_analysed']}" in text
    assert "each item was assigned to 3 raters" in text
    assert "random order" in text and "Williams design" in text and "hidden from the raters" in text
    alpha = report["agreement"]["fluency"]["alpha"]
    lo, hi = alpha["bootstrap_ci"]
    assert f"Fluency: α = {alpha['value']:.2f} (95% CI {lo:.2f} to {hi:.2f})" in text
    assert "Krippendorff, 2011" in text and "Shrout & Fleiss, 1979" in text and "Holm" in text
    study.counterbalance = study.randomize_items = False
    assert "Williams" not in methods_paragraph(study, report)
    assert "in the same order for every rater" in methods_paragraph(study, report)
    if os.environ.get("CONCORD_SHOW_METHODS"):
        print(text, table_latex(report_tables(report)[0], study.slug), sep="\n\n")
