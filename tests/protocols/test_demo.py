"""load_demo: a simulated study per preset with ratings, judge runs and a release, room left for
the demo annotators, and nothing new on a second run."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.datasets import FORMATS
from annotation.demo import AGENT_SLUG
from annotation.demo_languages import SLUG as LANGUAGES
from annotation.models import DatasetRelease, Rating, Study
from annotation.services.assignments import assignment_next
from annotation.simulation.items import COMPARE_PRESETS, PRESETS
from judges.models import JudgeRun
from tests.commands.lived_in import fresh_demo  # noqa: F401  (loaded once for the module)

pytestmark = pytest.mark.django_db


def test_load_demo_builds_full_studies_once(fresh_demo):  # noqa: F811
    studies = {s.slug: s for s in Study.objects.filter(slug__startswith="demo-").exclude(slug__in=[LANGUAGES, AGENT_SLUG])}
    assert set(studies) == {f"demo-{p}" for p in PRESETS + COMPARE_PRESETS}
    languages = Study.objects.get(slug=LANGUAGES)
    assert languages.language == "de" and languages.status == "open"
    assert languages.phases["instructions"]["check"][0]["key"] == "punkte"
    assert any("\u0600" <= ch <= "\u06ff" for ch in languages.items.get(external_id="ar-001").context)
    annotator = get_user_model().objects.get(username="annotator")
    for study in studies.values():
        assert Rating.objects.filter(assignment__study=study).count() > 0
        runs = JudgeRun.objects.filter(study=study)
        methods = sorted(r.config.get("method") for r in runs)
        assert all(r.status == "done" for r in runs), [(r.name, r.status, r.error) for r in runs]
        asked = [r for r in runs if r.config.get("method") != "jury"]  # a jury asks no model
        assert all(r.estimate["calls"] > 0 and r.cost_usd <= r.cost_cap_usd for r in asked)  # estimated, capped
        if study.slug == "demo-compare-pairwise":  # judges answer the raters' own pairwise question
            assert methods.count("pairwise") == 2 and all(
                r.config["method_options"].get("key") == "preference" for r in runs if r.config["method"] == "pairwise")
        if study.slug != "demo-compare-ranking":
            assert methods.count("jury") == 1  # the jury of the first two judges
        if study.slug not in ("demo-aqua-003", "demo-compare-ranking"):
            assert "geval" in methods  # a judge that states a distribution: calibration
        if study.slug == "demo-rrgen-001":
            assert "pairwise" in methods
        if study.slug == "demo-rrgen-001":
            assert study.routing.state["comparisons"] and study.status == "open"  # routing on, study kept open
        assert sorted(DatasetRelease.objects.filter(study=study, status="ready").values_list("format", flat=True)) \
            == sorted(FORMATS)  # every format, hf and the items, consensus and raters tables included
        assert assignment_next(study=study, rater=annotator) is not None, f"{study.slug}: nothing left to rate"
    agent = Study.objects.get(slug=AGENT_SLUG)  # trajectories rated per run and per step, no judges
    assert agent.items.filter(outputs__kind="trajectory").exists()
    assert Rating.objects.filter(assignment__study=agent, criterion__startswith="call_needed@").exists()
    assert assignment_next(study=agent, rater=annotator) is not None
    crowd = studies["demo-compare-pairwise"]
    assert crowd.training_pass_mark == 0.5 and crowd.items.filter(is_training=True).count() == 2
    assert crowd.crowd_links.filter(provider="prolific", revoked_at__isnull=True).exists()
    first = assignment_next(study=crowd, rater=get_user_model().objects.get(username="annotator2"))
    assert first.item.is_training  # a demo annotator meets the training first
    from annotation.services.phases import phase_state

    annotator3 = get_user_model().objects.get(username="annotator3")
    assert phase_state(study=crowd, rater=annotator3).state == "consent"  # and on the page, consent before it
    assert crowd.phases["attention_policy"]["reject_after_failed"] == 2
    counts = (Study.objects.count(), Rating.objects.count(), JudgeRun.objects.count())
    call_command("load_demo", stdout=io.StringIO())
    assert (Study.objects.count(), Rating.objects.count(), JudgeRun.objects.count()) == counts
    assert "researcher" in fresh_demo and "demo-rrgen-001" in fresh_demo


def test_the_demo_report_shows_every_trust_section(fresh_demo, client):  # noqa: F811
    """A fresh demo's report: calibration, bias-corrected scores with items only judges scored, the jury,
    pairwise position bias and strengths."""
    from django.urls import reverse

    client.force_login(get_user_model().objects.get(username="researcher"))
    data = client.get(reverse("report", args=["demo-rrgen-001"]), {"download": "json"}).json()
    trust = data["sections"]["Trusting the judges"]
    fluency = trust["criteria"]["fluency"]
    geval = next(r for r in fluency["runs"] if r.get("calibration"))
    assert geval["calibration"]["n"] > 0 and geval["calibration"]["ece"] is not None
    estimates = next(r["systems"] for r in fluency["runs"] if r.get("systems"))
    assert all(e["ppi_plus"]["mean"] is not None for e in estimates.values())  # items only judges scored
    assert trust["pairwise"] and trust["pairwise"][0]["position"]["n"] > 0
    judges = data["sections"]["Judges vs humans"]["criteria"]["fluency"]["judges"]
    assert any(name.startswith("rrgen-001-jury") for name in judges)


def test_the_demo_crowd_study_splits_its_report_by_the_participants_answers(fresh_demo, client):  # noqa: F811
    """The crowd study's simulated participants answered its questionnaires: the report's facets show
    agreement and system means per answer, and the answers download as a table."""
    from django.urls import reverse

    client.force_login(get_user_model().objects.get(username="researcher"))
    data = client.get(reverse("report", args=["demo-compare-pairwise"]), {"download": "json"}).json()
    native = data["sections"]["By participants' answers"]["pre.native_english"]
    assert set(native) == {"yes", "no"} and native["yes"]["n_raters"] == 2 and native["no"]["n_raters"] == 1
    assert native["yes"]["criteria"]["helpfulness"]["alpha"]["value"] is not None
    assert native["yes"]["criteria"]["helpfulness"]["system_means"]
    page = client.get(reverse("report", args=["demo-compare-pairwise"])).content.decode()
    assert 'data-facet="pre.native_english"' in page
