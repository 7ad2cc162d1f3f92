"""Money and runs (issue 59): the estimate's "at most" is what the requests allow and the cap holds it;
a run's state says what happened; a worker checks the endpoint and key before it asks; scores are
reused only from the same judge as the provider sees it; the run form offers the judges that fit.
With the real worker (thread) and the loopback OpenAI-compatible server."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import CommandError, call_command
from django.template.loader import render_to_string

from judges.fakeserver import running_fake_server
from judges.models import JudgeRun
from judges.report_section import judges_vs_humans
from judges.services import preflight
from judges.services.engine import pricing
from judges.services.requests import planned_requests
from judges.services.runs import judge_run_start

from .conftest import wait_for, wait_run_ends
from .test_runs_worker import one_output_items

pytestmark = pytest.mark.django_db(transaction=True)

KEY_ENV = "OPENAI_API_KEY"
REASONER = {"provider": "openai", "model": "gpt-5-mini", "api_key_env": KEY_ENV,
            "sampling": {"temperature": 1, "max_tokens": 300, "reasoning_effort": "minimal"}}
CAP_PER_CALL = 300 + 1024  # the visible answer plus the minimal effort's reasoning headroom


@pytest.fixture(autouse=True)
def fresh_preflight(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-key")
    preflight.forget()
    yield
    preflight.forget()


def _run_judge(*args: str) -> str:
    out = io.StringIO()
    call_command("run_judge", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


# ------------------------------------------------------------------------------------------- 1. the cap

def test_the_estimate_bounds_output_by_the_cap_each_request_carries(celery_worker_session, make_study, make_judge,
                                                                     fake_server):
    study = make_study("rrgen-001", items_text=one_output_items(3))
    judge = make_judge("reasoner", endpoint=fake_server.base_url, **REASONER)
    dry = _run_judge("--study", study.slug, "--judge", "reasoner", "--dry-run")

    run = wait_run_ends(judge_run_start(study=study, judge=judge))
    stats = fake_server.stats()
    est = run.estimate
    assert run.status == "done", run.error
    assert est["calls"] == stats.completion_requests == 15
    # what the requests on the wire allowed (the server sums max_completion_tokens x n as it gets them)
    assert est["max_output_tokens"] == stats.output_caps == 15 * CAP_PER_CALL
    assert f"output tokens: at most {15 * CAP_PER_CALL}" in dry
    price = pricing(run.config)
    assert est["max_cost_usd"] == pytest.approx(price.cost(est["input_tokens"], 15 * CAP_PER_CALL))
    # the request `judge_request` prints carries the same cap
    planned = planned_requests(run.config, study.rubric)
    assert planned and {p.request.json["max_completion_tokens"] for p in planned} == {CAP_PER_CALL}


def test_a_cap_below_the_bound_stops_the_run_before_the_requests_could_pass_it(
        celery_worker_session, make_study, make_judge, fake_server):
    study = make_study("rrgen-001", items_text=one_output_items(12))
    judge = make_judge("capped-reasoner", endpoint=fake_server.base_url, method_options={"chunk_size": 2},
                       price_in_per_m=0.25, price_out_per_m=2.0, **REASONER)
    dry = _run_judge("--study", study.slug, "--judge", judge.name, "--dry-run")
    bound = float(re.search(r"cost: at most \$([0-9.]+)", dry).group(1))
    cap = bound * 0.4
    run = judge_run_start(study=study, judge=judge, max_cost_usd=cap)
    wait_for(lambda: JudgeRun.objects.get(pk=run.pk).status == "paused", 60, what="the run to pause")
    wait_for(lambda: JudgeRun.objects.get(pk=run.pk).cost_reserved_usd < 1e-12, 30, what="chunks under way to end")
    run.refresh_from_db()
    stats = fake_server.stats()
    assert 0 < stats.completion_requests < run.estimate["calls"]
    # had every request asked generated all it allowed, the bill would still be within the cap
    assert pricing(run.config).cost(stats.prompt_tokens, stats.output_caps) <= cap
    assert run.cost_usd <= cap and "Raise the cap" in run.pause_reason


def test_a_chunk_of_long_items_reserves_its_own_worst_case_not_the_average(make_study, make_judge):
    import json

    from annotation.models import Item
    from judges.services.engine import output_criteria
    from judges.services.estimate import _pending, pending_max_cost, run_estimate
    from judges.services.runs import judge_config_snapshot

    lines = [json.dumps({"id": f"it-{i}", "context": "Review: fine." if i else "Review: " + "long words " * 4000,
                         "outputs": [{"system": "a", "content": "Thanks."}]}) for i in range(6)]
    study = make_study("rrgen-001", items_text="\n".join(lines) + "\n")
    config = judge_config_snapshot(make_judge("long", **REASONER), study)
    est = run_estimate(study=study, config=config)
    crits = output_criteria(config, study.rubric)
    items = list(Item.objects.filter(study=study).prefetch_related("outputs").order_by("id"))
    per_item = [pending_max_cost(config, study.rubric, *_pending(config, study.rubric, crits, [it])) for it in items]
    assert sum(per_item) == pytest.approx(est["max_cost_usd"])  # the same requests, counted the same way
    average = est["max_cost_usd"] / len(items)
    long_item = per_item[0]
    assert long_item > 2 * average  # the average would have let this chunk outspend its reservation


# ------------------------------------------------------------------------------------------ 2. the states

def test_a_run_whose_every_call_failed_is_failed_and_left_out_of_the_report(celery_worker_session, make_study,
                                                                             make_judge):
    study = make_study("rrgen-001", items_text=one_output_items(2))
    with running_fake_server(always_status=400) as server:
        make_judge("refused", endpoint=server.base_url)
        with pytest.raises(CommandError, match=r"ended failed \(failed\): 10 of 10 slots failed"):
            _run_judge("--study", study.slug, "--judge", "refused", "--wait", "--interval", "0.1")
    run = JudgeRun.objects.get(config__name="refused")
    assert run.status == "failed" and run.n_error == run.n_expected == 10
    assert run.error.startswith("no call succeeded: all 10 slots ended in error") and "400" in run.error

    section = judges_vs_humans(study)
    assert section["data"]["runs"] == []  # nothing of it is compared with the humans
    assert section["data"]["left_out"] == [{"id": run.pk, "judge": "refused", "status": "failed",
                                            "reason": run.error.splitlines()[0][:300]}]
    html = render_to_string("judges/report_section.html", {"section": section["context"]})
    assert f"Left out: run {run.pk} of refused failed (no call succeeded" in html


def test_a_run_with_some_failed_calls_is_done_with_errors_everywhere(celery_worker_session, make_study, make_judge,
                                                                     client_for, api_for, admin_user):
    study = make_study("rrgen-001", items_text=one_output_items(2))
    with running_fake_server(fail_500_first=3) as server:
        make_judge("flaky", endpoint=server.base_url, backend_options={"max_retries": 0},
                   method_options={"task_max_retries": 0})
        with pytest.raises(CommandError, match=r"ended done_with_errors \(done with errors\): 3 of 10 slots failed"):
            _run_judge("--study", study.slug, "--judge", "flaky", "--wait", "--interval", "0.1")
    run = JudgeRun.objects.get(config__name="flaky")
    assert run.status == "done_with_errors" and (run.n_error, run.n_scored) == (3, 7)

    api = api_for(admin_user).get(f"/api/judges/runs/{run.pk}/").json()
    assert (api["status"], api["status_label"], api["n_error"]) == ("done_with_errors", "Done with errors", 3)
    page = client_for(admin_user).get(f"/judges/studies/{study.slug}/").content.decode()
    assert 'data-status="done_with_errors">Done with errors: 3 of 10 slots failed' in page
    assert "Retry 3 failed" in page
    section = judges_vs_humans(study)  # its 7 verdicts still count
    assert [r["id"] for r in section["data"]["runs"]] == [run.pk] and section["data"]["left_out"] == []

    # asked to, the command accepts it
    with running_fake_server(fail_500_first=2) as server:
        make_judge("flaky-2", endpoint=server.base_url, backend_options={"max_retries": 0},
                   method_options={"task_max_retries": 0})
        _run_judge("--study", study.slug, "--judge", "flaky-2", "--wait", "--interval", "0.1", "--allow-errors")
    assert JudgeRun.objects.get(config__name="flaky-2").status == "done_with_errors"


def test_every_speaker_uses_the_runs_states():
    import ast
    from pathlib import Path

    from django.conf import settings

    # this checkout's client (the installed one may be another checkout's)
    source = (Path(settings.BASE_DIR) / "clients/python/concord_client/client.py").read_text()
    FINISHED = next(ast.literal_eval(node.value) for node in ast.parse(source).body
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "FINISHED")
    ended = {s for s in JudgeRun.Status.values if s not in JudgeRun.OPEN}
    assert FINISHED == ended == {"done", "done_with_errors", "cancelled", "failed"}
    assert dict(JudgeRun.Status.choices)["done_with_errors"] == "Done with errors"


# ---------------------------------------------------------------------------------------- 3. the preflight

def test_a_worker_without_the_key_fails_the_run_at_once_saying_where_to_set_it(
        celery_worker_session, make_study, make_judge, fake_server, monkeypatch):
    study = make_study("rrgen-001", items_text=one_output_items(2))
    judge = make_judge("keyed", endpoint=fake_server.base_url, api_key_env=KEY_ENV)
    monkeypatch.delenv(KEY_ENV)  # exported in another terminal: the workers never saw it
    run = wait_run_ends(judge_run_start(study=study, judge=judge), timeout=30)
    assert run.status == "failed"
    assert run.error.startswith(f"{KEY_ENV} is not set on the workers") and "where the workers start" in run.error
    assert fake_server.stats().completion_requests == 0 and run.n_done == 0


def test_a_key_the_endpoint_refuses_fails_the_run_before_any_call(celery_worker_session, make_study, make_judge,
                                                                 monkeypatch):
    study = make_study("rrgen-001", items_text=one_output_items(2))
    with running_fake_server(api_key="sk-right") as server:
        judge = make_judge("wrong-key", endpoint=server.base_url, api_key_env=KEY_ENV)
        monkeypatch.setenv(KEY_ENV, "sk-wrong")
        run = wait_run_ends(judge_run_start(study=study, judge=judge), timeout=30)
        assert run.status == "failed" and f"refused the key in {KEY_ENV} (401" in run.error
        assert "Incorrect API key" in run.error and "sk-wrong" not in run.error_shown
        assert server.stats().completion_requests == 0 and server.stats().paths == {}

        monkeypatch.setenv(KEY_ENV, "sk-right")
        again = wait_run_ends(judge_run_start(study=study, judge=judge), timeout=30)
        assert again.status == "done" and server.stats().completion_requests == again.n_expected


def test_an_endpoint_no_worker_can_reach_fails_the_run_naming_it(celery_worker_session, make_study, make_judge):
    study = make_study("rrgen-001", items_text=one_output_items(1))
    with running_fake_server() as server:
        gone = server.base_url
    run = wait_run_ends(judge_run_start(study=study, judge=make_judge("gone", endpoint=gone)), timeout=30)
    assert run.status == "failed" and "cannot reach judge gone's endpoint" in run.error and gone in run.error


# ------------------------------------------------------------------------------------------- 4. reuse

def test_scores_are_reused_only_from_the_same_judge_as_the_provider_sees_it(
        celery_worker_session, make_study, make_judge, client_for, api_for, admin_user):
    study = make_study("rrgen-001", items_text=one_output_items(2))
    with running_fake_server() as one, running_fake_server() as two:
        judge = make_judge("reused", endpoint=one.base_url, method_options={"use_cache": True})
        first = wait_run_ends(judge_run_start(study=study, judge=judge))
        assert first.status == "done" and one.stats().completion_requests == first.n_expected

        judge.endpoint = two.base_url  # same model name and prompts, another server
        judge.save()
        moved = wait_run_ends(judge_run_start(study=study, judge=judge))
        assert moved.reused_from_id is None and moved.n_reused == 0
        assert two.stats().completion_requests == moved.n_expected

        judge.endpoint = two.base_url.removesuffix("/v1") + "/"  # the same API root, written otherwise
        judge.save()
        same = judge_run_start(study=study, judge=judge)
        same.refresh_from_db()
        assert same.status == "done" and same.reused_from_id == moved.pk and same.n_reused == moved.n_expected
        assert two.stats().completion_requests == moved.n_expected  # nobody was asked

        judge.api_key_env = KEY_ENV  # another key: another account may answer otherwise
        judge.save()
        keyed = wait_run_ends(judge_run_start(study=study, judge=judge))
        assert keyed.reused_from_id is None and two.stats().completion_requests == 2 * moved.n_expected

    api = api_for(admin_user).get(f"/api/judges/runs/{same.pk}/").json()
    assert (api["reused_from"], api["n_reused"]) == (moved.pk, moved.n_expected)
    page = client_for(admin_user).get(f"/judges/studies/{study.slug}/").content.decode()
    assert f"differs from run {first.pk} in endpoint" in page
    assert f"{moved.n_expected} scores reused from run {moved.pk}" in page
    assert f"differs from run {same.pk} in key" in page


# ---------------------------------------------------------------------------------------- 5. the run form

def test_the_run_form_offers_the_judges_that_fit_the_rubric_first(make_study, make_judge, make_run, client_for,
                                                                  admin_user):
    rrgen = make_study("rrgen-001", items_text=one_output_items(2))
    aqua = make_study("aqua-003")
    other = make_judge("a-aqua-judge", method="label")  # the demo's demo-aqua-003-judge-1: made for AQUA
    make_run(aqua, other, {}, criteria=["label"])
    keyed = make_judge("b-aqua-keyed", method="label", method_options={"key": "label"})
    make_run(aqua, keyed, {}, criteria=["label"])
    own = make_judge("z-rrgen-judge")
    make_run(rrgen, own, {}, criteria=["fluency"])
    fresh = make_judge("m-new-judge")

    page = client_for(admin_user).get(f"/judges/studies/{rrgen.slug}/").content.decode()
    options = re.findall(r'<option value="(\d+)"( disabled)? data-fits="(\w+)">([^<]*)</option>', page)
    names = [text.split(" (")[0] for _, _, _, text in options]
    assert names == ["z-rrgen-judge", "m-new-judge", "a-aqua-judge", "b-aqua-keyed"]
    by_name = {text.split(" (")[0]: (disabled, fits, text) for _, disabled, fits, text in options}
    assert by_name["a-aqua-judge"][2].endswith(": made for aqua-003")
    assert by_name["b-aqua-keyed"][:2] == (" disabled", "no")
    assert "cannot score this rubric: it scores label, which this rubric does not have" in by_name["b-aqua-keyed"][2]
    assert by_name["z-rrgen-judge"][:2] == by_name["m-new-judge"][:2] == ("", "yes")
    assert fresh.pk and int(options[0][0]) == own.pk  # the first option is the one the estimate loads
