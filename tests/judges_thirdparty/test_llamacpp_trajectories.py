"""A trajectory judged through llama.cpp's own server: its chat template takes the assistant tool
calls and tool messages as sent (judges.prompts.trajectory), and every per-step slot gets its answer."""
from __future__ import annotations

import pytest

from annotation.simulation.agent_study import agent_study_create
from judges.llamacpp import MODEL_NAME
from judges.models import JudgeScore
from judges.services.runs import judge_chunk_process, judge_run_start

pytestmark = pytest.mark.django_db


def test_llamacpp_takes_trajectories_with_tool_calls(admin_user, make_judge, tap):
    study = agent_study_create(slug="agent-llamacpp", admin=admin_user, n_items=2, n_raters=1, seed=5).study
    judge = make_judge("llamacpp-traj", provider="llamacpp", endpoint=tap.base_url, model=MODEL_NAME,
                       criteria=["call_needed"], sampling={"temperature": 0, "max_tokens": 48},
                       backend_options={"timeout_s": 120}, method_options={"steps": "structured"})
    run = judge_run_start(study=study, judge=judge)
    judge_chunk_process(run_id=run.pk, item_ids=list(study.items.values_list("id", flat=True)))
    run.refresh_from_db()
    sent = tap.completions()
    assert [e.status for e in sent] == [200] * len(sent) and len(sent) == 2 * 2  # one call per trajectory
    assert all(any(m["role"] == "tool" for m in e.request["messages"]) for e in sent)
    assert run.status == "done", run.error
    assert JudgeScore.objects.filter(run=run, status="error").count() == 0
    assert JudgeScore.objects.filter(run=run).count() == run.n_expected > 0
