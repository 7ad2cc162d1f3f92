"""The planted study, built ONCE for the module through the real routes and the real Celery worker
(committed, so the worker and every page read it as any other study), and every page, download and
API answer the researcher sees of it, fetched once; removed afterwards."""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.simulation.latent import Knobs
from tests.planted import truth

PREFIX = "planted-"
# annotation/reports/paper.py's tables; a study has those its criteria give (here no accept rates)
PAPER_TABLES = ("agreement", "systems", "accept_rate", "raters", "positions", "comparisons")
SLUG = f"{PREFIX}crowd"


@dataclass
class Seen:
    """What the study's researcher and admin were shown, as the routes answered it."""

    study: Any
    participants: dict  # pid -> driver.Participant
    items: list[dict]  # the imported rows with their gold
    report: dict
    report_csv: str
    report_html: str
    paper: dict[str, bytes]
    export_csv: str
    payments: str
    progress: dict
    progress_html: str
    plan_html: str
    runs: dict  # judge name -> the run's API answer
    estimate_html: str
    served: dict  # judge name -> the loopback server's counters
    judge_scores: Any  # the study's judge scores download (a DataFrame)
    stored: dict  # (item, output position, rater) -> the rank of the rating in the order it was stored

    @property
    def judge_verdicts(self):
        from tests.planted.checks import judge_verdicts

        return judge_verdicts(self)


def _cleanup() -> None:
    from annotation.models import DatasetRelease, Study
    from judges.models import JudgeConfig

    DatasetRelease.objects.filter(study__slug__startswith=PREFIX).delete()
    Study.objects.filter(slug__startswith=PREFIX).delete()
    JudgeConfig.objects.filter(name__startswith=PREFIX).delete()
    get_user_model().objects.filter(username__startswith=PREFIX).delete()
    get_user_model().objects.filter(username__startswith="prolific-p-").delete()


def _get(client: Client, url: str, **params) -> bytes:
    r = client.get(url, params)
    assert r.status_code == 200, (url, r.status_code, r.content[:300])
    return b"".join(r.streaming_content) if r.streaming else r.content


def _build(admin, researcher) -> Seen:
    from annotation.demo import TRAINING
    from annotation.services.crowd import crowd_link_create
    from annotation.services.items import items_import
    from annotation.services.studies import study_create, study_members_add, study_set_status
    from annotation.simulation.items import items_for
    from annotation.models import Study
    from rubrics.services import rubric_presets_install
    from tests.planted.driver import Participant, gold_rows, walk

    version = {v.rubric.slug: v for v in rubric_presets_install()}[truth.PRESET]
    study = study_create(name="Planted crowd study", slug=SLUG, rubric_version=version, user=admin,
                         presentation=Study.Presentation.SIDE_BY_SIDE, raters_per_item=truth.RATERS_PER_ITEM,
                         training_pass_mark=truth.TRAINING_PASS_MARK, phases=truth_phases(),
                         attention_check_rate=truth.ATTENTION_RATE)
    rows = gold_rows(items_for(truth.PRESET, truth.N_ITEMS, truth.SEED))
    lines = rows + truth.ATTENTION + [{**r, "training": True} for r in TRAINING]
    items_import(study=study, text="\n".join(json.dumps(r) for r in lines), filename="planted.jsonl")
    study_members_add(study=study, usernames=[researcher.username], role="researcher")
    study_set_status(study=study, status=Study.Status.OPEN)
    link = crowd_link_create(study=study, user=admin, provider="prolific", completion_code="PLANTED",
                             time_limit_minutes=120)
    people = {}
    # The one who leaves first, so the finishers still find every item open to them.
    order = sorted(truth.PATHS, key=lambda p: p.steps != "left_midway")
    for path in order:
        people[path.pid] = p = Participant(study=study, link=link, path=path)
        walk(p)
    runs, served, estimate_html = _judges(study, admin)
    reader, boss = Client(), Client()
    reader.force_login(researcher)
    boss.force_login(admin)
    base = f"/studies/{study.slug}"
    paper = {}
    # Each table of the kit as its own file; the plots (pictures of figures checked in the report) are not
    # drawn: that took 20 s here.
    with mock.patch("annotation.reports.paper.report_plots"):
        tables = {name: reader.get(f"{base}/report/paper/tables/{name}.md") for name in PAPER_TABLES}
    for name, r in tables.items():
        assert r.status_code in (200, 404), (name, r.status_code)
        if r.status_code == 200:
            paper[f"tables/{name}.md"] = r.content
    from annotation.models import Rating

    stored = Rating.objects.filter(assignment__study=study, output__isnull=False).order_by("assignment_id", "output_id")
    order = stored.values_list("assignment__item__external_id", "output__position", "assignment__rater__username")
    return Seen(
        study=study, participants=people, items=rows, stored={key: rank for rank, key in enumerate(order)},
        report=json.loads(_get(reader, f"/api/studies/{study.slug}/report/")),
        report_csv=_get(reader, f"{base}/report/", download="csv").decode(),
        report_html=_get(reader, f"{base}/report/").decode(),
        paper=paper,
        export_csv=_get(reader, f"/api/studies/{study.slug}/export/", file="csv").decode(),
        payments=_get(boss, f"{base}/crowd-links/payments.csv", pay_per_item=truth.PAY_PER_ITEM).decode(),
        progress=json.loads(_get(reader, f"/api/studies/{study.slug}/progress/")),
        progress_html=_get(boss, f"{base}/progress/").decode(),
        plan_html=_get(reader, f"{base}/plan/").decode(),
        runs=runs, estimate_html=estimate_html, served=served,
        judge_scores=pd.read_parquet(io.BytesIO(_get(reader, f"/api/judges/studies/{study.slug}/scores/"))),
    )


def truth_phases() -> dict:
    from annotation.demo import CROWD_PHASES

    return {**CROWD_PHASES, "attention_policy": {"reject_after_failed": truth.REJECT_AFTER_FAILED},
            "screened_out": {"payment": truth.SCREENED_OUT_PAY, "code": "SCREENOUT"}}


def _judges(study, admin) -> tuple[dict, dict, str]:
    """Each planted judge configured against its own loopback server, estimated on the run form and
    started from the judges page; the worker scores it. Returns the runs' API answers, the servers'
    counters and the good judge's estimate fragment."""
    from judges.fakeserver import running_fake_server
    from judges.models import JudgeConfig, JudgeRun
    from judges.services.configs import judge_config_save
    from judges.simulation import StudyResponder

    boss = Client()
    boss.force_login(admin)
    runs, served, estimate = {}, {}, ""
    for j in truth.JUDGES:
        responder = StudyResponder(study=study, preset=truth.PRESET, seed=truth.SEED,
                                   knobs=Knobs(noise=j.noise, rater_bias=0.0))
        behaviour = {"always_status": 400} if j.failing else {"responder": responder}
        with running_fake_server(**behaviour) as server:
            judge, _ = judge_config_save(data={
                "name": j.name, "backend": "openai", "model": j.model, "endpoint": server.base_url,
                "method": "pairwise", "concurrency": 8, "price_in_per_m": j.price_in_per_m,
                "price_out_per_m": j.price_out_per_m, "backend_options": {"max_retries": 0, "timeout_s": 30},
                "method_options": {"use_cache": False, "chunk_size": 16, "key": "preference",
                                   "task_max_retries": 1, "task_retry_backoff_s": 0.1}})
            if not j.failing:
                estimate = _get(boss, f"/judges/studies/{study.slug}/estimate/", judge=judge.pk).decode()
            r = boss.post(f"/judges/studies/{study.slug}/run/", {"judge": judge.pk})
            assert r.status_code == 302, r.content[:300]
            run = JudgeRun.objects.filter(judge=judge).latest("pk")
            deadline = time.monotonic() + 120
            while JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).exists():
                assert time.monotonic() < deadline, f"the worker did not finish run {run.pk}"
                time.sleep(0.2)
            served[j.name] = server.stats()
        runs[j.name] = json.loads(_get(boss, f"/api/judges/runs/{run.pk}/"))
        JudgeConfig.objects.filter(pk=judge.pk).update(endpoint="http://127.0.0.1:9/v1")  # the server is gone
    return runs, served, estimate


@pytest.fixture(scope="module")
def seen(django_db_setup, django_db_blocker, celery_worker_session) -> Seen:
    from rubrics.models import Rubric

    with django_db_blocker.unblock():
        _cleanup()
        rubrics_before = set(Rubric.objects.values_list("pk", flat=True))
        users = get_user_model().objects
        admin = users.create_user(username=f"{PREFIX}admin", password="x", is_staff=True, is_superuser=True)
        researcher = users.create_user(username=f"{PREFIX}researcher", password="x")
        try:
            yield _build(admin, researcher)
        finally:
            _cleanup()
            Rubric.objects.exclude(pk__in=rubrics_before).delete()
