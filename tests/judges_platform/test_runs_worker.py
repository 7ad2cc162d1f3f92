"""Judge runs end to end: a real Celery worker (thread) on Redis, the fake OpenAI-compatible server over HTTP."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db.models import Count

from annotation.models import Output
from judges.models import JudgeRun, JudgeScore
from judges.services.files import run_file
from judges.services.runs import judge_run_cancel, judge_run_resume, judge_run_start

from .conftest import wait_for, wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)

RRGEN_KEYS = {"semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy", "decision"}


def one_output_items(n: int) -> str:
    lines = []
    for i in range(n):
        lines.append(json.dumps({"id": f"it-{i:03d}", "context": f"Review number {i}: the room was fine.",
                                 "outputs": [{"system": "sys-a", "content": f"Thank you for review {i}."}]}))
    return "\n".join(lines) + "\n"


def assert_each_slot_once(run: JudgeRun) -> None:
    dupes = (JudgeScore.objects.filter(run=run).values("output_id", "criterion").annotate(n=Count("id"))
             .filter(n__gt=1))
    assert not dupes.exists()
    slots = set(JudgeScore.objects.filter(run=run).values_list("output_id", "criterion"))
    assert len(slots) == run.n_expected


def test_scores_land_exactly_once_with_usage_cost_and_files(celery_worker_session, make_study, make_judge,
                                                           fake_server):
    study = make_study("rrgen-001")
    judge = make_judge(endpoint=fake_server.base_url)
    run = judge_run_start(study=study, judge=judge)
    assert run.n_outputs == 15 and set(run.criteria) == RRGEN_KEYS and run.n_expected == 75

    wait_run_ends(run)
    assert run.status == "done", run.error
    assert JudgeScore.objects.filter(run=run).count() == 75
    assert_each_slot_once(run)
    stats = fake_server.stats()
    assert stats.completion_requests == 75  # every slot asked exactly once
    assert run.n_scored == 75 and run.n_unparsed == run.n_error == 0

    likert = JudgeScore.objects.filter(run=run, criterion="fluency")
    assert all(1 <= s.score <= 7 and s.value == s.score for s in likert)
    decisions = JudgeScore.objects.filter(run=run, criterion="decision")
    assert {s.value for s in decisions} <= {"ACCEPT", "REJECT"}
    assert all(s.score == (1.0 if s.value == "ACCEPT" else 0.0) for s in decisions)

    # usage is what the server reported; cost is priced at $1/M in, $2/M out
    assert run.tokens_in == stats.prompt_tokens and run.tokens_out == stats.completion_tokens
    assert run.cost_usd == pytest.approx((stats.prompt_tokens * 1.0 + stats.completion_tokens * 2.0) / 1e6)

    rows = list(csv.DictReader(io.StringIO(run_file(run, "labeled.csv").read_text())))
    assert len(rows) == 75 and {r["criterion"] for r in rows} == RRGEN_KEYS
    report = run_file(run, "report.txt").read_text()
    assert "scored: 75" in report and "status: done" in report


def test_rate_limits_are_retried_by_the_task(celery_worker_session, make_study, make_judge):
    from judges.fakeserver import running_fake_server

    study = make_study("rrgen-001")
    with running_fake_server(fail_429_first=6, retry_after="0") as server:
        # the backend gives up at once, so the 429s surface to the task, which retries those slots
        judge = make_judge(endpoint=server.base_url, backend_options={"max_retries": 0})
        run = judge_run_start(study=study, judge=judge)
        wait_run_ends(run)
        stats = server.stats()
    assert run.status == "done"
    assert run.n_scored == 75 and run.n_error == 0
    assert stats.statuses.get("429") == 6
    assert stats.completion_requests == 75 + 6  # only the rate-limited slots were asked again
    assert_each_slot_once(run)


def test_retries_exhausted_store_an_error_and_the_run_ends_failed(celery_worker_session, make_study, make_judge):
    from judges.fakeserver import running_fake_server

    study = make_study("aqua-003")
    with running_fake_server(always_status=503) as server:
        judge = make_judge(endpoint=server.base_url, method="label", backend_options={"max_retries": 0},
                           method_options={"task_max_retries": 2, "chunk_size": 100})
        run = judge_run_start(study=study, judge=judge)
        wait_run_ends(run)
        stats = server.stats()
    n = Output.objects.filter(item__study=study).count()
    assert run.status == "failed" and run.n_error == run.n_expected == n  # no call succeeded
    assert run.error.startswith(f"no call succeeded: all {n} slots ended in error; the first: RetryableBackendError")
    assert stats.completion_requests == n * 3  # first try + 2 task retries
    assert all("RetryableBackendError" in s.detail.get("parse", "") for s in JudgeScore.objects.filter(run=run))


def test_garbage_output_is_kept_raw_and_counted_unparsed(celery_worker_session, make_study, make_judge):
    from judges.fakeserver import running_fake_server

    study = make_study("aqua-003")
    with running_fake_server(garbage=True) as server:
        judge = make_judge(endpoint=server.base_url, method="label")
        run = judge_run_start(study=study, judge=judge)
        wait_run_ends(run)
    assert run.status == "done"
    assert run.n_unparsed == run.n_expected == Output.objects.filter(item__study=study).count()
    assert run.n_scored == 0
    scores = list(JudgeScore.objects.filter(run=run))
    assert all(s.status == "unparsed" and s.value is None and "lorem ipsum" in s.raw_text for s in scores)
    assert "lorem ipsum" in run_file(run, "errors.txt").read_text()


def test_resume_after_cancel_scores_nothing_twice(celery_worker_session, make_study, make_judge):
    from judges.fakeserver import running_fake_server

    study = make_study("rrgen-001", items_text=one_output_items(40))
    with running_fake_server(latency_s=0.05) as server:
        judge = make_judge(endpoint=server.base_url, method_options={"chunk_size": 1})
        run = judge_run_start(study=study, judge=judge)
        assert run.n_expected == 200
        wait_for(lambda: JudgeScore.objects.filter(run=run).exists(), 30, what="first scores")
        judge_run_cancel(run=run)

        def settled():  # chunks already running finish; no new chunk starts
            before = JudgeScore.objects.filter(run=run).count()
            import time
            time.sleep(1.0)
            return JudgeScore.objects.filter(run=run).count() == before

        wait_for(settled, 30, interval=0, what="cancelled run to settle")
        run.refresh_from_db()
        partial = JudgeScore.objects.filter(run=run).count()
        assert run.status == "cancelled" and 0 < partial < 200
        asked_before = server.stats().completion_requests
        assert asked_before == partial

        judge_run_resume(run=run)
        wait_run_ends(run)
        assert run.status == "done"
        assert server.stats().completion_requests == 200  # the resumed part asked only for what was missing
    assert_each_slot_once(run)


METHOD_CASES = [
    # (preset, method, extra judge fields, slots per output, item-level slots per item)
    ("rrgen-001", "all_in_one", {}, 5, 0),
    ("rrgen-001", "geval", {"mode": "logprobs"}, 4, 0),
    ("rrgen-001", "self_consistency", {"method_options": {"samples": 3}}, 5, 0),
    ("rrgen-001", "pairwise", {}, 0, 3),
    ("aqua-003", "modular", {}, 1, 0),
    ("aqua-003", "escalation", {"method_options": {"experts": ["expert-a", "expert-b"]}}, 1, 0),
]


@pytest.mark.parametrize("preset,method,extra,per_output,per_item", METHOD_CASES,
                         ids=[c[1] for c in METHOD_CASES])
def test_every_method_runs_through_the_worker(celery_worker_session, make_study, make_judge, fake_server,
                                              preset, method, extra, per_output, per_item):
    study = make_study(preset)
    if method == "escalation":
        make_judge("expert-a", endpoint=fake_server.base_url, method="label")
        make_judge("expert-b", endpoint=fake_server.base_url, method="label")
    judge = make_judge(f"j-{method.replace('_', '-')}", endpoint=fake_server.base_url, method=method, **extra)
    run = judge_run_start(study=study, judge=judge)
    n_outputs = Output.objects.filter(item__study=study).count()
    n_items = study.items.count()
    assert run.n_expected == n_outputs * per_output + n_items * per_item
    wait_run_ends(run)
    assert run.status == "done", run.error
    if per_item == 0:
        assert_each_slot_once(run)
    scores = list(JudgeScore.objects.filter(run=run))
    assert len(scores) == run.n_expected and run.n_error == 0
    assert run.n_scored + run.n_unparsed == run.n_expected and run.n_scored > 0
    if method == "geval":
        assert all(0 < s.doubt["top_prob"] <= 1 and 1 <= s.score <= 7 for s in scores if s.status == "scored")
    if method == "self_consistency":
        assert all("spread" in s.doubt or "agreement" in s.doubt for s in scores if s.status == "scored")
    if method == "pairwise":
        assert all(s.output_id is None and s.criterion.startswith("pair:overall:") for s in scores)
        assert {s.value for s in scores if s.status == "scored"} <= {0, 1, 2, "tie"}
    if method in ("modular", "escalation"):
        assert {s.value for s in scores if s.status == "scored"} <= {"TP", "FP3", "FP2", "FP1"}
    if method == "escalation":
        assert [st["name"] for st in run.config["stages"]] == ["j-escalation", "expert-a", "expert-b"]


def test_a_local_transformers_judge_runs_through_the_worker(celery_worker_session, make_study, make_judge, tmp_path):
    from tests.judges.tiny_model import build_tiny_llama

    path = build_tiny_llama(tmp_path / "tiny-llama")
    study = make_study("rrgen-001")
    judge = make_judge("tiny-local", backend="transformers", model=str(path), endpoint="", mode="logprobs",
                       method="geval", criteria=["fluency"], backend_options={"batch_size": 4, "device": "cpu"})
    run = judge_run_start(study=study, judge=judge)
    wait_run_ends(run, timeout=120)
    assert run.status == "done", run.error
    scores = list(JudgeScore.objects.filter(run=run))
    assert len(scores) == run.n_expected == 15 and run.n_scored == 15
    # the expected score from the next-token distribution over "1".."7" lies inside the scale
    assert all(1.0 <= s.score <= 7.0 and 0 < s.doubt["top_prob"] <= 1 for s in scores)
    assert run.tokens_in > 0
