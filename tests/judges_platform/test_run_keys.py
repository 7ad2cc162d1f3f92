"""Judge runs keyed by what made them: the same key reuses the stored scores without asking the
model; a changed key is a new run, and the judges page says what differs."""

from __future__ import annotations

import pytest

from judges.models import JudgeRun, JudgeScore
from judges.services.run_keys import key_differences, run_key, run_key_parts
from judges.services.runs import judge_config_snapshot, judge_run_start
from tests.judges_platform.conftest import wait_run_ends
from tests.reports.factories import items_jsonl


def _scores(run) -> dict:
    return {(s.item_id, s.output_id, s.criterion): (s.value, s.status)
            for s in JudgeScore.objects.filter(run=run)}


@pytest.mark.django_db(transaction=True)
def test_same_key_reuses_scores_without_a_model_call(celery_worker_session, make_study, make_judge, fake_server,
                                                     client_for, admin_user):
    study = make_study("rrgen-001")
    judge = make_judge(endpoint=fake_server.base_url, method_options={"use_cache": True})
    first = wait_run_ends(judge_run_start(study=study, judge=judge))
    asked = fake_server.stats().completion_requests
    assert first.status == "done" and asked == first.n_expected

    again = judge_run_start(study=study, judge=judge)
    again.refresh_from_db()
    assert again.status == "done" and again.reused_from_id == first.pk and again.key == first.key
    assert fake_server.stats().completion_requests == asked  # no model call
    assert _scores(again) == _scores(first)
    assert again.cost_usd == 0 and again.n_scored == first.n_scored
    copied = JudgeScore.objects.filter(run=again).first()
    original = JudgeScore.objects.get(run=first, item=copied.item, output=copied.output, criterion=copied.criterion)
    assert copied.detail["reused_from_run"] == first.pk and copied.cost_usd == 0
    assert copied.detail["cached_cost_usd"] == pytest.approx(original.cost_usd)  # what it would have cost

    # a new model is a new key: the model is asked, and the page says what differs
    judge.model = "fake-judge-2"
    judge.save()
    changed = wait_run_ends(judge_run_start(study=study, judge=judge))
    assert changed.reused_from_id is None and changed.key != first.key
    assert fake_server.stats().completion_requests == asked + changed.n_expected
    page = client_for(admin_user).get(f"/judges/studies/{study.slug}/").content.decode()
    assert f"differs from run {again.pk} in model" in page
    assert f"scores reused from run {first.pk}" in page


@pytest.mark.django_db(transaction=True)
def test_items_added_since_are_the_only_ones_judged(celery_worker_session, make_study, make_judge, fake_server):
    from annotation.services.items import items_import

    study = make_study("rrgen-001", items_text=items_jsonl(4))
    judge = make_judge(endpoint=fake_server.base_url, method_options={"use_cache": True})
    first = wait_run_ends(judge_run_start(study=study, judge=judge))
    asked = fake_server.stats().completion_requests
    items_import(study=study, text=items_jsonl(2, prefix="new", systems=("sys-x", "sys-y", "sys-z")),
                 filename="more.jsonl")  # new texts, so the response cache cannot answer them either
    second = wait_run_ends(judge_run_start(study=study, judge=judge))
    assert second.status == "done" and second.reused_from_id == first.pk
    per_item = first.n_expected // 4
    assert fake_server.stats().completion_requests == asked + 2 * per_item
    assert JudgeScore.objects.filter(run=second).count() == 6 * per_item


def test_fresh_runs_when_the_cache_is_off(make_study, make_judge, make_run):
    study = make_study("rrgen-001", items_text=items_jsonl(2))
    judge = make_judge()  # the test judges say use_cache: False
    previous = JudgeRun.objects.create(study=study, judge=judge, config=judge_config_snapshot(judge), status="done",
                                       key="x", criteria=["fluency"])
    run = judge_run_start(study=study, judge=judge)
    assert run.reused_from_id is None and run.key != previous.key and run.status == "queued"


@pytest.mark.parametrize("preset,method", [("feedback-000", "per_criterion"), ("feedback-000", "all_in_one"),
                                           ("rrgen-001", "pairwise"), ("aqua-003", "label"),
                                           ("aqua-003", "modular"), ("fulltext-004", "geval"),
                                           ("codegen-002", "self_consistency")])
def test_key_covers_what_changes_answers_and_nothing_else(preset_version, preset, method):
    from judges.config import validate_judge
    from judges.services import engine

    version = preset_version[preset]
    base = validate_judge({"name": "k", "backend": "openai", "model": "m", "endpoint": "http://h/v1",
                           "method": method, "sampling": {"temperature": 0}})
    rubric = version.definition
    crits = engine.output_criteria(base, rubric)

    def key(**changes):
        config = {**base, **changes}
        return run_key(run_key_parts(config, rubric, crits, version.pk))

    same = key()
    assert key(name="other", concurrency=99, queue="gpu-2", price_in_per_m=9.0) == same
    assert key(backend_options={"timeout_s": 5}, method_options={"chunk_size": 3}) == same
    assert key(model="m2") != same
    assert key(sampling={"temperature": 0.7}) != same
    if method == "per_criterion":
        assert key(prompt_overrides={"role": "You are a strict grader."}) != same
    assert run_key(run_key_parts(base, rubric, crits, version.pk + 1000)) != same
    parts = run_key_parts(base, rubric, crits, version.pk)
    assert key_differences(parts, {**parts, "model": "m2", "sampling": {"temperature": 1}}) == ["model", "sampling"]
