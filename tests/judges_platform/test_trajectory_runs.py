"""Judges on trajectories, run through the loopback OpenAI-compatible server (which refuses tool
messages out of place, as the Chat Completions API does): per-step criteria as one call per step or
one structured call, slots stored as raters' per-step ratings are, the truncation rule in the run's
files, and the report comparing judge and humans per step and per trajectory."""
from __future__ import annotations

import json

import pytest

from annotation.models import Output
from annotation.simulation.agent_study import agent_study_create
from annotation.step_questions import split_key
from annotation.trajectory import parse, steps
from judges.models import JudgeScore
from judges.prompts.trajectory import TRUNCATION_RULE
from judges.services.files import run_dir, write_run_files
from judges.services.runs import judge_chunk_process, judge_run_start

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_study(admin_user):
    return agent_study_create(slug="agent-judged", admin=admin_user, n_items=3, n_raters=2, seed=3).study


def _expected_slots(study) -> set[tuple[int, str]]:
    """(output id, slot) a judge of every criterion owes: whole ones once, per-step ones per matching step."""
    kinds = {"call_needed": ("tool_call",), "turn_helpful": ("assistant",)}
    out = set()
    for o in Output.objects.filter(item__study=study):
        out |= {(o.pk, "task_success"), (o.pk, "answer_supported")}
        for s in steps(parse(o.content)):
            out |= {(o.pk, f"{k}@{s.key}") for k, ks in kinds.items() if s.kind in ks}
    return out


def _run(study, judge):
    run = judge_run_start(study=study, judge=judge)
    judge_chunk_process(run_id=run.pk, item_ids=list(study.items.values_list("id", flat=True)))
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("mode", ["calls", "structured"])
def test_per_step_criteria_are_judged_per_step_or_in_one_structured_call(agent_study, make_judge, fake_server, mode):
    judge = make_judge(f"traj-{mode}", endpoint=fake_server.base_url, method_options={"steps": mode})
    run = _run(agent_study, judge)
    expected = _expected_slots(agent_study)
    assert fake_server.stats().statuses.get("400", 0) == 0  # every conversation had its tool messages in place
    assert run.status == "done", run.error
    assert run.n_expected == len(expected) == run.n_scored
    stored = set(JudgeScore.objects.filter(run=run).values_list("output_id", "criterion"))
    assert stored == expected
    step_slots = [c for _, c in expected if "@" in c]
    whole = len(expected) - len(step_slots)
    per_criterion = {(o, split_key(c)[0]) for o, c in expected if "@" in c}
    calls = fake_server.stats().completion_requests
    assert calls == (whole + len(step_slots) if mode == "calls" else whole + len(per_criterion))
    values = set(JudgeScore.objects.filter(run=run, criterion__contains="@").values_list("value", flat=True))
    assert values <= {"yes", "no"} and values


def test_truncation_rule_is_in_the_run_files_and_the_report_compares_per_step_and_per_trajectory(
        agent_study, make_judge, fake_server):
    run = _run(agent_study, make_judge("traj", endpoint=fake_server.base_url))
    write_run_files(run)
    report = (run_dir(run) / "report.txt").read_text()
    assert TRUNCATION_RULE in report

    from judges.report_steps import judge_steps

    section = judge_steps(agent_study)
    by_step = section["per_step"]["call_needed"]
    assert by_step["tool_call"]["judges"]  # the judge's answers compared with the humans' per step
    units = by_step["tool_call"]["n_units"]
    n_calls = sum(1 for o in agent_study.items.all() for out in o.outputs.all()
                  for s in steps(parse(out.content)) if s.kind == "tool_call")
    assert 0 < units <= n_calls
    whole = section["per_trajectory"]["call_needed"]
    assert whole["measure"] == "numeric" and whole["n_units"] == 6  # one unit per trajectory output
    # the per-trajectory value is the share of steps answered with the first choice, for judge and humans
    judge_vec = section["per_trajectory_values"]["call_needed"][f"{run.name} (run {run.pk})"]
    scores = JudgeScore.objects.filter(run=run, criterion__startswith="call_needed@", status="scored")
    first = {}
    for s in scores:
        first.setdefault(s.output_id, []).append(1.0 if s.value == "yes" else 0.0)
    assert sorted(judge_vec.values()) == pytest.approx(sorted(sum(v) / len(v) for v in first.values()))
    assert json.dumps(section["data"])  # the report's JSON download takes it as it is


def test_the_report_section_shows_per_step_criteria_per_step_and_per_trajectory(agent_study, make_judge, fake_server):
    from django.template.loader import render_to_string

    from judges.report_section import judges_vs_humans

    run = _run(agent_study, make_judge("traj", endpoint=fake_server.base_url, method_options={"steps": "structured"}))
    section = judges_vs_humans(agent_study)
    assert [c["key"] for c in section["context"]["steps"]] == ["call_needed", "turn_helpful"]
    assert {r["unit"] for r in section["context"]["steps"][0]["rows"]} == {"each tool call", "per trajectory"}
    assert {c["key"] for c in section["context"]["criteria"]} == {"task_success", "answer_supported"}
    assert set(section["data"]["steps"]["per_trajectory"]) == {"call_needed", "turn_helpful"}
    html = render_to_string("judges/report_section.html", {"section": section["context"]})
    assert html.count('data-testid="judges-per-step"') == 2 and f"{run.name} (run {run.pk})" in html


def test_an_anthropic_judge_gets_the_trajectories_as_tool_use_blocks_the_strict_server_accepts(
        agent_study, monkeypatch):
    from judges.services.configs import judge_config_save
    from tests.doubles.strict_provider_server import running_strict_server

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    with running_strict_server("anthropic") as srv:
        judge, _ = judge_config_save(data={
            "name": "claude-traj", "provider": "anthropic", "model": "claude-sonnet-4-5", "endpoint": srv.base_url,
            "method": "per_criterion", "criteria": ["call_needed"], "sampling": {"max_tokens": 200, "temperature": 0},
            "method_options": {"steps": "structured", "use_cache": False, "chunk_size": 8},
            "backend_options": {"max_retries": 1, "backoff_base_s": 0.01, "timeout_s": 10}})
        run = _run(agent_study, judge)
        assert srv.refusals == []
        bodies = [b for _, _, b in srv.requests]
    assert run.status == "done", run.error
    assert run.n_scored == run.n_expected == sum(1 for _, c in _expected_slots(agent_study) if c.startswith("call_"))
    assert len(bodies) == agent_study.items.count() * 2  # one structured call per trajectory
    blocks = [b["type"] for body in bodies for m in body["messages"] for b in m["content"]]
    assert "tool_use" in blocks and "tool_result" in blocks
