"""The judge's LLM backend is down, slow or answering garbage, end to end: a real Celery
worker (in-process, threads) on Redis, the loopback OpenAI-compatible server over HTTP.

tests/judges covers each fault inside the HTTP client and the parsers, and
tests/judges_platform/test_runs_worker.py covers 429s retried by the task, 503 until the
retries run out, and garbage labels kept raw. What is left, and checked here, is the
recovery verdict of a whole run: no score invented while the backend misbehaves, each slot
judged exactly once, and the run completing once the backend is back (by itself while the
task retries last, by a resume after they ran out).
"""

from __future__ import annotations

import threading
import time

import pytest
from celery.signals import task_retry

from judges.fakeserver import running_fake_server
from judges.models import JudgeRun, JudgeScore
from judges.services.files import run_file
from judges.services.runs import judge_run_resume, judge_run_start

from bench.loadclient import free_port

from .conftest import duplicated_slots, wait_for, wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)

SLOTS = 75  # rrgen-001's demo study: 5 items x 3 outputs x 5 criteria


class RetryCounter:
    """Counts the judge_chunk retries the worker schedules (Celery's task_retry signal)."""

    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, sender=None, **kwargs):
        if getattr(sender, "name", "") == "judges.tasks.judge_chunk":
            with self.lock:
                self.n += 1

    def __enter__(self):
        task_retry.connect(self, weak=False)
        return self

    def __exit__(self, *exc):
        task_retry.disconnect(self)


def down_endpoint() -> tuple[int, str]:
    """A loopback port with nothing listening: every connection is refused."""
    port = free_port()
    return port, f"http://127.0.0.1:{port}/v1"


def test_backend_down_at_start_then_up_completes_with_nothing_invented(celery_worker_session, make_study, make_judge,
                                                                       media_root, record_property):
    study = make_study("rrgen-001")
    port, endpoint = down_endpoint()
    judge = make_judge(endpoint=endpoint, method_options={"task_max_retries": 30, "task_retry_backoff_s": 0.1})
    with RetryCounter() as retries:
        run = judge_run_start(study=study, judge=judge)
        wait_for(lambda: retries.n >= 6, 60, what="the chunks to retry against the dead backend")
        # while the backend is down nothing is written: no invented score, no premature error row
        stored_while_down = JudgeScore.objects.filter(run=run).count()
        run.refresh_from_db()
        status_while_down = run.status
        retries_while_down = retries.n
        with running_fake_server(port=port) as server:
            up = time.monotonic()
            wait_run_ends(run, timeout=60)
            recovery_s = time.monotonic() - up
            asked = server.stats().completion_requests
    record_property("task_retries_while_down", retries_while_down)
    record_property("scores_while_down", stored_while_down)
    record_property("scores_expected", run.n_expected)
    record_property("scores_stored", JudgeScore.objects.filter(run=run).count())
    record_property("slots_duplicated", duplicated_slots(run))
    record_property("recovery_s", round(recovery_s, 2))
    assert stored_while_down == 0 and status_while_down in JudgeRun.ACTIVE
    assert run.status == JudgeRun.Status.DONE, run.error
    assert run.n_scored == run.n_expected == SLOTS and run.n_error == 0
    assert JudgeScore.objects.filter(run=run).count() == SLOTS and duplicated_slots(run) == 0
    assert asked == SLOTS  # the server, once up, was asked each slot exactly once


def test_backend_down_past_every_retry_fails_the_run_then_resume_completes(celery_worker_session, make_study,
                                                                           make_judge, media_root,
                                                                           record_property):
    study = make_study("rrgen-001")
    port, endpoint = down_endpoint()
    judge = make_judge(endpoint=endpoint, method_options={"task_max_retries": 2})
    run = judge_run_start(study=study, judge=judge)
    wait_run_ends(run, timeout=60)
    # the worker's check before any call found nothing listening: the run fails saying why, no value made up
    errors = list(JudgeScore.objects.filter(run=run))
    assert run.status == JudgeRun.Status.FAILED and run.n_done == 0 and errors == []
    assert "cannot reach judge fake-judge's endpoint" in run.error and endpoint in run.error

    with running_fake_server(port=port) as server:
        judge_run_resume(run=run)
        up = time.monotonic()
        wait_run_ends(run, timeout=60)
        recovery_s = time.monotonic() - up
        asked = server.stats().completion_requests
    record_property("scores_expected", run.n_expected)
    record_property("rows_before_resume", len(errors))
    record_property("scores_stored", JudgeScore.objects.filter(run=run).count())
    record_property("slots_duplicated", duplicated_slots(run))
    record_property("recovery_s", round(recovery_s, 2))
    assert run.status == JudgeRun.Status.DONE, run.error
    assert run.n_scored == SLOTS and run.n_error == 0
    assert JudgeScore.objects.filter(run=run).count() == SLOTS and duplicated_slots(run) == 0
    assert asked == SLOTS
    report = run_file(run, "report.txt").read_text()
    assert f"scored: {SLOTS}" in report and "error: 0" in report  # the files follow the resumed run


def test_a_server_gone_after_its_check_passed_fails_the_next_run_saying_why(celery_worker_session, make_study,
                                                                             make_judge, media_root):
    """A worker remembers an endpoint's passed check (judges.services.preflight) for minutes. A first run is
    judged; the server then goes away and a second run starts within those minutes: its chunks ask on the
    remembered pass, fail on refused connections, forget the pass, and the next attempt's check fails the run
    with the reason. Without the forgetting the last attempt stored a row of errors per slot (seen in a full run
    where the port of a server stopped by an earlier test came back as the "down" port of this file's tests)."""
    port = free_port()
    judge = make_judge(endpoint=f"http://127.0.0.1:{port}/v1", method_options={"task_max_retries": 2})
    with running_fake_server(port=port):
        first = judge_run_start(study=make_study("rrgen-001"), judge=judge)
        wait_run_ends(first, timeout=60)
    assert first.status == JudgeRun.Status.DONE and first.n_scored == SLOTS
    second = judge_run_start(study=make_study("rrgen-001", slug="second-rrgen-001"), judge=judge)
    wait_run_ends(second, timeout=60)
    assert second.status == JudgeRun.Status.FAILED, (second.status, second.n_done, second.error)
    assert "cannot reach judge fake-judge's endpoint" in second.error
    assert second.n_done == 0 and not JudgeScore.objects.filter(run=second).exists()


def test_a_done_run_without_errors_is_not_resumed(celery_worker_session, make_study, make_judge, media_root):
    from judges.services.runs import JudgeRunError

    study = make_study("rrgen-001")
    with running_fake_server() as server:
        run = judge_run_start(study=study, judge=make_judge(endpoint=server.base_url))
        wait_run_ends(run)
        assert run.status == JudgeRun.Status.DONE and run.n_scored == SLOTS
        with pytest.raises(JudgeRunError, match="nothing to resume"):
            judge_run_resume(run=run)
        assert server.stats().completion_requests == SLOTS


def test_slow_backend_beyond_the_client_timeout_is_retried_without_duplicates(celery_worker_session, make_study,
                                                                               make_judge, media_root,
                                                                               record_property):
    """The first requests take longer than the client waits: they time out, and (the HTTP
    client retrying none itself) the task retries just those slots; the late answers the
    server still sends to the closed connections are never written."""
    study = make_study("rrgen-001")
    slow = 6
    with running_fake_server(slow_first=slow, slow_s=2.0) as server, RetryCounter() as retries:
        judge = make_judge(endpoint=server.base_url, backend_options={"max_retries": 0, "timeout_s": 0.5},
                           method_options={"task_max_retries": 5, "task_retry_backoff_s": 0.05})
        run = judge_run_start(study=study, judge=judge)
        wait_run_ends(run, timeout=60)
        asked = server.stats().completion_requests
    record_property("slow_requests", slow)
    record_property("task_retries", retries.n)
    record_property("scores_expected", run.n_expected)
    record_property("scores_stored", JudgeScore.objects.filter(run=run).count())
    record_property("slots_duplicated", duplicated_slots(run))
    assert run.status == JudgeRun.Status.DONE, run.error
    assert run.n_scored == SLOTS and run.n_error == 0
    assert JudgeScore.objects.filter(run=run).count() == SLOTS and duplicated_slots(run) == 0
    assert retries.n >= 1
    assert asked == SLOTS + slow  # only the timed-out slots were asked again


@pytest.mark.parametrize("fault,status", [("garbage", "unparsed"), ("malformed", "error")])
def test_garbage_answers_invent_no_score_and_the_report_says_so(celery_worker_session, make_study, make_judge,
                                                                media_root, record_property, fault, status):
    """garbage: a 200 whose text holds no verdict (kept raw, unparsed, not retried);
    malformed: a 200 whose body is not JSON (retried per policy, then an error)."""
    study = make_study("rrgen-001")
    with running_fake_server(**{fault: True}) as server:
        judge = make_judge(endpoint=server.base_url, backend_options={"max_retries": 0},
                           method_options={"task_max_retries": 2})
        run = judge_run_start(study=study, judge=judge)
        wait_run_ends(run, timeout=60)
        asked = server.stats().completion_requests
    scores = list(JudgeScore.objects.filter(run=run))
    record_property("fault", fault)
    record_property("scores_expected", run.n_expected)
    record_property("rows_stored", len(scores))
    record_property("scores_invented", sum(s.value is not None or s.score is not None for s in scores))
    record_property("slots_duplicated", duplicated_slots(run))
    record_property("requests", asked)
    # garbage: every call answered (done); malformed: no call succeeded (failed)
    assert run.status == (JudgeRun.Status.DONE if fault == "garbage" else JudgeRun.Status.FAILED)
    assert len(scores) == SLOTS and duplicated_slots(run) == 0
    assert all(s.status == status and s.value is None and s.score is None for s in scores)
    assert run.n_scored == 0 and getattr(run, f"n_{status}") == SLOTS
    assert asked == (SLOTS if fault == "garbage" else SLOTS * 3)  # malformed: first try + 2 task retries
    report = run_file(run, "report.txt").read_text()
    assert f"status: {run.status}" in report and "scored: 0" in report and f"{status}: {SLOTS}" in report
    if fault == "garbage":
        assert all("lorem ipsum" in s.raw_text for s in scores)
        assert run_file(run, "errors.txt").read_text().count("status: unparsed") == SLOTS
