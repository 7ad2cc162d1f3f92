"""Issue 56 §3: `judge_request` for a trajectory rubric prints what the judge would send for a
trajectory, sent nowhere: the agent's messages in the provider's own format (OpenAI tool_calls and
tool messages, Anthropic tool_use and tool_result blocks), a call per step or one structured call per
criterion as configured, the truncation rule with the requests, and with `--item` an item of the
user's own file (checked as an upload is; model names never sent)."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.simulation.agent import AGENT_RUBRIC, agent_item
from judges.prompts.trajectory import RESULT_CHARS, TRUNCATION_RULE
from rubrics.services import rubric_version_create

pytestmark = pytest.mark.django_db

OPENAI = "name: g\nprovider: openai\nmodel: gpt-4o-mini\n"
ANTHROPIC = "name: c\nprovider: anthropic\nmodel: claude-sonnet-4-5\nsampling: {max_tokens: 200}\n"


@pytest.fixture(autouse=True)
def agent_rubric():
    rubric_version_create(data=AGENT_RUBRIC)


def printed(tmp_path, judge: str, *args: str) -> str:
    path = tmp_path / "judge.yaml"
    path.write_text(judge)
    out = StringIO()
    call_command("judge_request", str(path), "--rubric", AGENT_RUBRIC["slug"], *args, stdout=out)
    return out.getvalue()


def test_openai_gets_the_stand_in_trajectory_as_tool_messages_one_call_per_step(tmp_path):
    out = printed(tmp_path, OPENAI)
    assert out.startswith(f"# truncation rule: {TRUNCATION_RULE}\n")
    reqs = json.loads(printed(tmp_path, OPENAI, "--json"))
    # task_success, answer_supported (whole), call_needed on the one tool call, turn_helpful on both assistant
    # turns; the highlight question is not a judge's (spans)
    assert len(reqs) == 5 and all(r["truncation_rule"] == TRUNCATION_RULE for r in reqs)
    messages = reqs[0]["json"]["messages"]
    ask = next(m for m in messages if m.get("tool_calls"))
    assert ask["tool_calls"][0]["function"]["name"] == "lookup"
    answer = next(m for m in messages if m["role"] == "tool")
    assert answer["tool_call_id"] == ask["tool_calls"][0]["id"] and answer["content"] == "<the tool's result>"
    last = [r["json"]["messages"][-1]["content"] for r in reqs]
    assert sum("The step to judge" in text for text in last) == 3  # one call per step asked about


def test_anthropic_gets_tool_use_blocks_and_structured_steps_one_call_per_criterion(tmp_path):
    judge = ANTHROPIC + "method_options: {steps: structured}\n"
    reqs = json.loads(printed(tmp_path, judge, "--json"))
    assert len(reqs) == 4  # two whole-trajectory criteria, one structured call for each per-step criterion
    blocks = [b for r in reqs[:1] for m in r["json"]["messages"] if isinstance(m["content"], list)
              for b in m["content"]]
    kinds = {b["type"] for b in blocks}
    assert {"tool_use", "tool_result"} <= kinds
    assert all(r["url"] == "https://api.anthropic.com/v1/messages" for r in reqs)


def test_an_item_of_the_users_file_is_sent_blinded_and_cut_by_the_rule(tmp_path):
    row = agent_item(0, 1)
    long_result = "x" * (RESULT_CHARS + 500)
    row["outputs"][0]["content"]["messages"][3]["content"] = long_result
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(agent_item(0, 0)) + "\n" + json.dumps(row) + "\n")
    out = printed(tmp_path, OPENAI, "--item", str(items), "--line", "2", "--json")
    reqs = json.loads(out)
    assert "[... 500 characters cut ...]" in out and long_result not in out
    assert row["context"] in out
    for secret in ("agent-gpt-4o", "agent-llama", row["outputs"][0]["content"]["trace_id"]):
        assert secret not in out
    assert len({json.dumps(r["json"]["messages"][1:-1]) for r in reqs}) == 2  # both outputs' trajectories


def test_a_whole_trajectory_rubric_previews_a_trajectory_when_asked(tmp_path):
    plain = printed(tmp_path, OPENAI.replace("name: g", "name: w") + "criteria: [task_success]\n", "--json")
    assert "tool_calls" in plain  # the rubric asks per step elsewhere: a trajectory all the same
    text = printed(tmp_path, "name: t\nprovider: openai\nmodel: gpt-4o-mini\n", "--trajectory")
    assert "# truncation rule:" in text


def test_a_bad_item_file_or_line_is_refused_naming_it(tmp_path):
    items = tmp_path / "items.jsonl"
    bad = agent_item(0, 0)
    bad["outputs"][0]["content"]["messages"][3]["tool_call_id"] = "call_nowhere"
    items.write_text(json.dumps(bad) + "\n")
    with pytest.raises(CommandError, match=r"line 1: outputs\[0\]\.content\.messages\[3\]\.tool_call_id"):
        printed(tmp_path, OPENAI, "--item", str(items))
    items.write_text(json.dumps(agent_item(0, 0)) + "\n")
    with pytest.raises(CommandError, match="has 1 item"):
        printed(tmp_path, OPENAI, "--item", str(items), "--line", "3")
    with pytest.raises(CommandError, match="no such file"):
        printed(tmp_path, OPENAI, "--item", str(tmp_path / "missing.jsonl"))
