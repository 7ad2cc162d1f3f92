"""manage.py study_report: the report page's downloads, byte for byte, from the command line."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, ManagementUtility, call_command
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("fmt", ["html", "csv", "json"])
def test_the_command_writes_the_bytes_the_page_downloads(feedback_study, client_for, researcher, tmp_path, fmt):
    out = tmp_path / f"report.{fmt}"
    call_command("study_report", feedback_study.slug, "--format", fmt, "--out", str(out))
    response = client_for(researcher).get(reverse("report", args=[feedback_study.slug]), {"download": fmt})
    assert response.status_code == 200
    assert out.read_bytes() == response.content
    assert len(out.read_bytes()) > 500


def test_the_html_report_stands_alone(feedback_study, tmp_path):
    out = tmp_path / "report.html"
    call_command("study_report", feedback_study.slug, "--format", "html", "--out", str(out))
    html = out.read_text()
    assert html.count("<svg") >= 2  # the plots, inline
    assert "<style>" in html and "<link" not in html and "<script src" not in html
    assert "Overall Rating" in html


def test_json_to_standard_output(feedback_study):
    buf = io.StringIO()
    call_command("study_report", feedback_study.slug, "--format", "json", stdout=buf)
    report = json.loads(buf.getvalue())
    assert report["study"]["slug"] == feedback_study.slug
    assert set(report["agreement"]) >= {"correctness", "overall"}


def test_unknown_study_and_format_are_clear_errors(feedback_study):
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("study_report", "nope", "--format", "csv")
    with pytest.raises(CommandError, match="'pdf' is not a report format; choose one of html, csv, json"):
        call_command("study_report", feedback_study.slug, "--format", "pdf")
    with pytest.raises(CommandError, match="outside 0..1"):
        call_command("study_report", feedback_study.slug, "--format", "csv", "--icc-threshold", "7")


def test_help_names_the_formats(capsys):
    # manage.py's own entry point, in this process (a fresh one only imports pandas, SciPy and matplotlib again)
    with pytest.raises(SystemExit) as done:
        ManagementUtility(["manage.py", "study_report", "--help"]).execute()
    out = capsys.readouterr().out
    assert done.value.code == 0 and "--format" in out and "html,csv,json" in out and "--out" in out
