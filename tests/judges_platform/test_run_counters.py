"""A run's live counters: what the progress page, the cost cap and the end-of-run check read instead
of counting a million scores. They must equal a count of the scores at every moment a chunk has
written, count a chunk delivered twice once, and never end a run on their word alone."""

from __future__ import annotations

import pytest

from judges.models import JudgeRun, JudgeScore
from judges.selectors import run_progress
from judges.services.run_scores import add_to_totals, insert_new_scores, judge_run_finish_if_complete, run_totals
from judges.services.runs import judge_chunk_process, judge_run_start

pytestmark = pytest.mark.django_db

STATUS_COUNTERS = ("scored", "unparsed", "refusal", "error", "truncated")


def counters(run: JudgeRun) -> dict:
    run.refresh_from_db()
    return {**{s: getattr(run, f"n_{s}") for s in STATUS_COUNTERS}, "done": run.n_done,
            "tokens_in": run.tokens_in, "tokens_out": run.tokens_out, "cost": pytest.approx(run.cost_usd)}


def counted(run: JudgeRun) -> dict:
    t = run_totals(run)
    return {**{s: t[s] for s in STATUS_COUNTERS}, "done": t["done"], "tokens_in": t["tokens_in"],
            "tokens_out": t["tokens_out"], "cost": pytest.approx(float(t["cost"]))}


def item_ids(study) -> list[int]:
    return list(study.items.order_by("id").values_list("id", flat=True))


def test_counters_follow_each_chunk_and_the_progress_reads_them(make_study, make_judge, fake_server):
    study = make_study("rrgen-001")
    run = judge_run_start(study=study, judge=make_judge(endpoint=fake_server.base_url))
    ids = item_ids(study)
    assert run.n_expected == 75 and counters(run)["done"] == 0

    judge_chunk_process(run_id=run.pk, item_ids=ids[:2])
    mid = counters(run)
    assert mid == counted(run) and mid["done"] == 2 * 3 * 5 and mid["tokens_in"] > 0
    progress = run_progress(run)
    assert (progress.done, progress.scored, progress.tokens_in) == (30, mid["scored"], mid["tokens_in"])
    assert run.status == JudgeRun.Status.RUNNING  # 30 of 75: not done

    judge_chunk_process(run_id=run.pk, item_ids=ids[:2])  # delivered again: nothing pending, nothing counted
    assert counters(run) == mid

    judge_chunk_process(run_id=run.pk, item_ids=ids[2:])
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE and counters(run) == counted(run) and run.n_done == 75


def test_rows_another_attempt_wrote_first_are_neither_inserted_nor_counted(make_study, make_judge):
    study = make_study("rrgen-001")
    run = judge_run_start(study=study, judge=make_judge())
    out = study.items.order_by("id").first().outputs.order_by("position").first()

    def rows(status: str) -> list[JudgeScore]:
        return [JudgeScore(run=run, item=out.item, output=out, criterion=c, status=status, value=3, score=3.0,
                           tokens_in=100, tokens_out=7, cost_usd=0.5) for c in ("fluency", "decision")]

    first = insert_new_scores(rows("scored"))
    assert sorted(first) == [("scored", 100, 7, 0.5)] * 2
    add_to_totals(run_id=run.pk, inserted=first)
    again = insert_new_scores(rows("error"))  # a racing attempt: the slots are taken
    assert again == []
    add_to_totals(run_id=run.pk, inserted=again)
    assert counters(run) == counted(run)
    assert (run.n_scored, run.n_error, run.tokens_in, run.cost_usd) == (2, 0, 200, 1.0)
    assert set(JudgeScore.objects.filter(run=run).values_list("status", flat=True)) == {"scored"}


def test_counters_that_drifted_ahead_do_not_end_the_run_and_are_corrected(make_study, make_judge, fake_server):
    study = make_study("rrgen-001")
    run = judge_run_start(study=study, judge=make_judge(endpoint=fake_server.base_url))
    judge_chunk_process(run_id=run.pk, item_ids=item_ids(study)[:1])
    # e.g. scores deleted under a running run: the counters claim every slot is done
    JudgeRun.objects.filter(pk=run.pk).update(n_scored=run.n_expected)

    assert judge_run_finish_if_complete(run_id=run.pk) is False
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.RUNNING
    assert counters(run) == counted(run) and run.n_done == 15


def test_counters_that_lag_end_the_run_on_a_recount(make_study, make_judge, fake_server):
    study = make_study("rrgen-001")
    run = judge_run_start(study=study, judge=make_judge(endpoint=fake_server.base_url))
    judge_chunk_process(run_id=run.pk, item_ids=item_ids(study))
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, n_scored=0, n_unparsed=0)
    assert judge_run_finish_if_complete(run_id=run.pk) is False  # the counters say 0 of 75: no look
    assert judge_run_finish_if_complete(run_id=run.pk, recount=True) is True
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE and run.n_done == 75


def test_a_chunk_of_an_earlier_attempt_asks_nothing_after_the_run_went_on(make_study, make_judge, fake_server):
    """A worker held a chunk for a retry while its run failed; the run was resumed (a new attempt, with chunks of
    its own for the same items) before the retry came back. That chunk must not ask the provider again: a full
    run saw each of its slots asked twice (90 calls for 75 slots)."""
    from judges.services.runs import judge_run_resume

    study = make_study("rrgen-001")
    run = judge_run_start(study=study, judge=make_judge(endpoint=fake_server.base_url))
    ids = item_ids(study)
    assert run.attempt == 0
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.FAILED, error="the backend was down")
    run = judge_run_resume(run=run)
    assert run.attempt == 1 and run.status in JudgeRun.ACTIVE
    asked = fake_server.stats().completion_requests
    stale = judge_chunk_process(run_id=run.pk, item_ids=ids[:2], attempt=0)
    assert stale.skipped == "superseded" and stale.written == 0
    assert fake_server.stats().completion_requests == asked and counters(run)["done"] == 0
    current = judge_chunk_process(run_id=run.pk, item_ids=ids[:2], attempt=1)
    assert current.written == 2 * 3 * 5 and fake_server.stats().completion_requests > asked


@pytest.mark.parametrize("meanwhile", ["failed", "failed and resumed", "cancelled"])
def test_a_chunk_whose_run_stopped_during_its_preflight_asks_nothing(make_study, make_judge, fake_server, monkeypatch,
                                                                     meanwhile):
    """The chunk found its run active, then waited on the endpoint's preflight; meanwhile another chunk failed the
    run (the endpoint was down), a user cancelled it, or the endpoint came up and the run was resumed as a new
    attempt. The chunk must not ask the judge: the resumed attempt's chunks ask for the same items (a full run saw
    105 calls for 75 slots, tests/faults/test_llm_backend_faults.py)."""
    from judges.services import runs
    from judges.services.runs import judge_run_cancel, judge_run_fail, judge_run_resume

    study = make_study("rrgen-001")
    run = judge_run_start(study=study, judge=make_judge(endpoint=fake_server.base_url))

    def preflight_while_the_run_stops(config):
        if meanwhile == "cancelled":
            judge_run_cancel(run=JudgeRun.objects.get(pk=run.pk))
        else:
            judge_run_fail(run_id=run.pk, error="cannot reach the endpoint")
        if meanwhile == "failed and resumed":
            judge_run_resume(run=JudgeRun.objects.get(pk=run.pk))
        return None  # the endpoint answers now

    monkeypatch.setattr(runs, "preflight_problem", preflight_while_the_run_stops)
    asked = fake_server.stats().completion_requests
    outcome = judge_chunk_process(run_id=run.pk, item_ids=item_ids(study)[:2], attempt=0)
    assert outcome.written == 0
    assert outcome.skipped == {"failed": "failed", "failed and resumed": "superseded", "cancelled": "cancelled"}[meanwhile]
    assert fake_server.stats().completion_requests == asked
    assert not JudgeScore.objects.filter(run=run, item_id__in=item_ids(study)[:2]).exists()
