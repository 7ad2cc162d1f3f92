"""Background work by kind (issue 55 §2): every task has a queue and soft and hard time limits set by its
kind in config/celery.py; a build held stuck by one worker starves neither judge runs nor the beat's
tasks; a build past its limit fails with a reason the datasets page shows, and the next build goes on."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.datasets import releases as releases_module
from annotation.datasets.releases import release_build, releases_create, releases_requeue_lost
from annotation.models import DatasetRelease, Study
from config.celery import KINDS, TASK_KINDS, app, registered_task, time_limits
from tests.conftest import current_database_url
from tests.workers import start_worker, stop_worker

from .conftest import app_broker, wait_for, wait_run_ends, worker_events

PROJECT_TASKS = ("annotation.", "judges.", "rubrics.", "config.")


def test_every_task_has_a_kind_with_its_queue_and_time_limits():
    app.loader.import_default_modules()
    ours = sorted(name for name in app.tasks if name.startswith(PROJECT_TASKS))
    assert ours and sorted(TASK_KINDS) == ours
    assert set(TASK_KINDS.values()) == set(KINDS)
    for name, kind in TASK_KINDS.items():
        task = app.tasks[name]
        soft, hard = time_limits(kind)
        assert app.amqp.router.route({}, name)["queue"].name == kind
        assert (task.soft_time_limit, task.time_limit) == (soft, hard) and 0 < soft < hard


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.mark.django_db
def test_a_build_past_its_limit_fails_with_the_reason_shown(rated_study_for_builds, researcher, client_for, media,
                                                            settings, monkeypatch):
    study = rated_study_for_builds
    settings.TASK_TIME_LIMITS = {**settings.TASK_TIME_LIMITS, "builds": 5}
    clock = iter([0.0, 6.0])  # the build starts, then its first chunk is reported 6 s later
    monkeypatch.setattr(releases_module, "_clock", lambda: next(clock, 6.0))
    slow, fast = releases_create(study=study, version="1.0.0", formats=["csv", "jsonl"])
    failed = release_build(release_id=slow.pk)
    assert failed.status == "failed" and failed.error == "took longer than 5 s (the time limit of release builds and reports)"
    assert not list((media / "releases").rglob("*.csv*"))  # nothing half-written left
    monkeypatch.setattr(releases_module, "_clock", lambda: 0.0)
    assert release_build(release_id=fast.pk).status == "ready"  # the next build goes on
    page = client_for(researcher).get(reverse("datasets", args=[study.slug])).content.decode()
    assert "failed" in page and "took longer than 5 s" in page


@pytest.mark.django_db
def test_a_build_killed_at_its_hard_limit_is_failed_not_sent_again(rated_study_for_builds, media,
                                                                   django_capture_on_commit_callbacks):
    (release,) = releases_create(study=rated_study_for_builds, version="1.0.0", formats=["csv"])
    _, hard = time_limits("builds")
    DatasetRelease.objects.filter(pk=release.pk).update(status=DatasetRelease.Status.BUILDING,
                                                        started_at=timezone.now() - timedelta(seconds=hard + 1))
    with django_capture_on_commit_callbacks(execute=False):
        assert releases_requeue_lost(held=set, settle_s=0) == []
    release.refresh_from_db()
    assert release.status == "failed" and release.error == f"took longer than {hard} s (the time limit of release builds and reports)"


@pytest.mark.django_db
def test_a_judge_chunk_past_its_limit_fails_the_run_with_the_reason(make_study, make_judge, monkeypatch):
    from celery.exceptions import SoftTimeLimitExceeded

    from judges import tasks
    from judges.services.runs import judge_run_start

    run = judge_run_start(study=make_study("rrgen-001"), judge=make_judge())  # its chunks wait for a commit

    def stalls(**_):
        raise SoftTimeLimitExceeded()
    monkeypatch.setattr(tasks, "judge_chunk_process", stalls)
    assert tasks.judge_chunk.run(run.pk, [1]) == {"written": 0, "skipped": "time limit"}
    run.refresh_from_db()
    assert run.status == "failed" and run.error == "took longer than 600 s (the time limit of judge calls)"


@pytest.mark.django_db
def test_a_report_past_its_limit_shows_the_reason(make_study, monkeypatch, settings):
    from celery.exceptions import SoftTimeLimitExceeded

    from annotation.reports import background

    settings.REPORT_BACKGROUND_RATINGS = 0  # every report computed by a worker
    study = make_study("rrgen-001")

    def stalls(study):
        raise SoftTimeLimitExceeded()
    monkeypatch.setattr(background, "study_report", stalls)
    with pytest.raises(SoftTimeLimitExceeded):
        background.report_compute(study.pk)
    with pytest.raises(background.ReportFailed, match="took longer than 1800 s"):
        background.report_for_request(study)


@pytest.fixture
def rated_study_for_builds(make_study, researcher):
    from tests.workspace.conftest import items_jsonl

    return make_study("rrgen-001", researchers=[researcher], items_text=items_jsonl(2))


@pytest.mark.django_db(transaction=True)
def test_a_stuck_build_starves_neither_judge_runs_nor_the_beat(private_redis, make_study, make_judge, media,
                                                               tmp_path):
    """One worker per kind, as `make run` and compose start them. The build blocks on its release's row,
    which this test holds locked; meanwhile a judge run ends and the beat's deadline task closes a study."""
    from judges.fakeserver import running_fake_server
    from judges.services.runs import judge_run_start

    study = make_study("rrgen-001", items_text="\n".join(
        f'{{"id": "q{i}", "context": "c", "outputs": [{{"system": "s", "content": "o{i}"}}]}}' for i in range(2)))
    due = make_study("rrgen-001", slug="past-deadline", deadline=timezone.now() - timedelta(minutes=1))
    log = tmp_path / "workers.log"
    workers = []
    holder = psycopg.connect(current_database_url(), autocommit=False)
    watcher = psycopg.connect(current_database_url(), autocommit=True)  # sees each moment's activity
    with app_broker(private_redis.url), running_fake_server() as server:
        try:
            for kind in KINDS:  # started together: each pays its imports at once
                workers.append(start_worker(log, queues=kind, redis_url=private_redis.url, visibility_s=60,
                                            name=f"kind-{kind}", concurrency=1, pool="threads"))
            (release,) = releases_create(study=study, version="1.0.0", formats=["csv"])
            holder.execute(f"SELECT 1 FROM {DatasetRelease._meta.db_table} WHERE id = %s FOR UPDATE", [release.pk])
            # the build's claim waits on the row: its worker, the only builds worker, is taken
            wait_for(lambda: watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                             " AND datname = current_database()").fetchone()[0] > 0,
                     60, interval=0.02, what="the build to block on its release's row")
            run = judge_run_start(study=study, judge=make_judge(endpoint=server.base_url))
            registered_task("annotation.tasks.studies_close_past_deadline").delay()
            wait_run_ends(run, timeout=90)
            wait_for(lambda: Study.objects.get(pk=due.pk).status == Study.Status.CLOSED, 60, interval=0.02,
                     what="the beat's task to close the study past its deadline")
            assert run.status == "done", (run.error, worker_events(log))
            assert DatasetRelease.objects.get(pk=release.pk).status == DatasetRelease.Status.PENDING  # still stuck
            holder.rollback()  # the build goes on
            wait_for(lambda: DatasetRelease.objects.get(pk=release.pk).status == DatasetRelease.Status.READY, 60,
                     interval=0.02, what="the build to end once its row is free")
        finally:
            holder.close()
            watcher.close()
            for worker in workers:
                stop_worker(worker)
