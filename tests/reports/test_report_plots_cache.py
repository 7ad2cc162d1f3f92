"""The report page's plots (its second request, ?fragment=plots) are kept by the report's content (annotation.reports.downloads
cached_report_plots): a second view draws nothing, a changed report (another threshold, new ratings) is
drawn again, and what is kept equals what would be drawn."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Rating
from annotation.reports import downloads
from annotation.reports.plots import report_plots

pytestmark = pytest.mark.django_db


@pytest.fixture
def drawn(monkeypatch):
    calls = []

    def counting(report):
        calls.append(report)
        return report_plots(report)

    monkeypatch.setattr(downloads, "report_plots", counting)
    return calls


def test_a_second_view_draws_nothing_and_a_changed_report_is_drawn_again(client, rated_study, researcher, drawn):
    client.force_login(researcher)
    url = reverse("report", args=[rated_study.slug])
    client.get(url)
    assert drawn == []  # the page answers with placeholders; its second request draws
    first = client.get(url, {"fragment": "plots"}).content.decode()
    assert len(drawn) == 1 and "<svg" in first
    again = client.get(url, {"fragment": "plots"}).content.decode()
    assert len(drawn) == 1 and again.count("<svg") == first.count("<svg")
    client.get(url, {"fragment": "plots", "icc_threshold": "0.5"})
    assert len(drawn) == 2  # the acceptance flags are part of the report the plots are drawn from
    rating = next(r for r in Rating.objects.filter(assignment__study=rated_study) if isinstance(r.value, int))
    Rating.objects.filter(pk=rating.pk).update(value=1 if rating.value != 1 else 7)
    client.get(url, {"fragment": "plots"})
    assert len(drawn) == 3


def test_the_kept_plots_equal_the_drawn_ones(rated_study):
    report, _sections = downloads.report_with_sections(rated_study)
    kept = downloads.cached_report_plots(report)
    assert downloads.cached_report_plots(report) == kept == report_plots(report)
