"""load_demo: a simulated study per preset with ratings, judge runs and a release, room left for
the demo annotators, and nothing new on a second run."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.models import DatasetRelease, Rating, Study
from annotation.services.assignments import assignment_next
from annotation.simulation.items import PRESETS
from judges.models import JudgeRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_load_demo_builds_full_studies_once():
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    studies = {s.slug: s for s in Study.objects.filter(slug__startswith="demo-")}
    assert set(studies) == {f"demo-{p}" for p in PRESETS}
    annotator = get_user_model().objects.get(username="annotator")
    for study in studies.values():
        assert Rating.objects.filter(assignment__study=study).count() > 0
        assert [r.status for r in JudgeRun.objects.filter(study=study)] == ["done", "done"]
        assert DatasetRelease.objects.filter(study=study, status="ready").count() == 5
        assert assignment_next(study=study, rater=annotator) is not None, f"{study.slug}: nothing left to rate"
    counts = (Study.objects.count(), Rating.objects.count(), JudgeRun.objects.count())
    call_command("load_demo", stdout=io.StringIO())
    assert (Study.objects.count(), Rating.objects.count(), JudgeRun.objects.count()) == counts
    assert "researcher" in out.getvalue() and "demo-rrgen-001" in out.getvalue()
