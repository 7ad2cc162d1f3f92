"""Issue 56 §1: trajectories as items. The shape's validation (errors name the step and field), the
rater's view (steps, folded tool calls and long results, errors in words, no model names), and
per-step questions: asked per matching step, stored one rating per step, refused by name."""

from __future__ import annotations

import json

import pytest

from annotation import trajectory
from annotation.importers import ItemFileError, parse_items
from annotation.models import Assignment, Rating
from annotation.rendering import render_content
from annotation.simulation.agent import AGENT_RUBRIC, agent_item
from rubrics.loader import RubricError, validate_rubric
from tests.workspace.conftest import open_study_with_rubric

CALL = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"lyon\"}"}}
TRAJ = {"trace_id": "4bf92f35", "meta": {"agent": "secret-agent-v2"}, "messages": [
    {"role": "user", "content": "Trains to Lyon?"},
    {"role": "assistant", "content": None, "reasoning": "Look it up.", "tool_calls": [CALL],
     "meta": {"model": "gpt-4o-secret", "provider": "openai", "input_tokens": 10, "latency_ms": 5}},
    {"role": "tool", "tool_call_id": "call_1", "content": "x" * 900, "meta": {"error": "HTTP 503 upstream"}},
    {"role": "assistant", "name": "secret-bot", "content": "No trains found."}]}


def _refusal(row: dict) -> list[tuple[int, str, str]]:
    with pytest.raises(ItemFileError) as exc:
        parse_items(json.dumps(row))
    return exc.value.errors


def _row(content, kind="trajectory") -> dict:
    return {"id": "a1", "context": "c", "outputs": [{"system": "s", "kind": kind, "content": content}]}


def test_an_object_or_its_json_text_is_stored_canonical():
    for content in (TRAJ, json.dumps(TRAJ), TRAJ["messages"]):
        (item,) = parse_items(json.dumps(_row(content)))
        stored = json.loads(item.outputs[0].content)
        assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "tool", "assistant"]
        assert stored["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{\"q\": \"lyon\"}"
    args_as_object = json.loads(json.dumps(TRAJ))
    args_as_object["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"q": "lyon"}
    (item,) = parse_items(json.dumps(_row(args_as_object)))
    assert json.loads(item.outputs[0].content)["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"q": "lyon"}'


@pytest.mark.parametrize("change, field, words", [
    (lambda t: t["messages"][2].update(tool_call_id="call_9"), "outputs[0].content.messages[2].tool_call_id",
     "answers no earlier tool call"),
    (lambda t: t["messages"][1]["tool_calls"][0]["function"].update(arguments="{not json"),
     "outputs[0].content.messages[1].tool_calls[0].function.arguments", "must be JSON text"),
    (lambda t: t["messages"][0].update(role="robot"), "outputs[0].content.messages[0].role", "must be one of"),
    (lambda t: t["messages"][1]["meta"].update(input_tokens=-3), "outputs[0].content.messages[1].meta.input_tokens",
     ">= 0"),
    (lambda t: t["messages"][0].update(tool_calls=[]), "outputs[0].content.messages[0].tool_calls",
     "not a field of a user message"),
    (lambda t: t["messages"][3].update(content=None), "outputs[0].content.messages[3].content", "required"),
])
def test_a_bad_trajectory_is_refused_naming_step_and_field(change, field, words):
    bad = json.loads(json.dumps(TRAJ))
    change(bad)
    errors = _refusal(_row(bad))
    assert len(errors) == 1, errors
    line, where, message = errors[0]
    assert (line, where) == (1, field) and words in message


def test_a_trajectory_context_is_validated_too():
    errors = _refusal({"id": "a", "context": {"messages": []}, "context_kind": "trajectory",
                       "outputs": [{"system": "s", "content": "x"}]})
    assert errors == [(1, "context.messages", "required, a non-empty list of messages")]


def test_steps_and_blinding():
    data = trajectory.parse(TRAJ)
    assert [(s.key, s.kind) for s in trajectory.steps(data)] == [
        ("m0", "user"), ("m1", "assistant"), ("m1.t0", "tool_call"), ("m2", "tool_result"), ("m3", "assistant")]
    blinded = trajectory.blind(trajectory.dumps(data))
    for secret in ("gpt-4o-secret", "openai", "secret-bot", "secret-agent-v2", "4bf92f35"):
        assert secret not in blinded
    assert "HTTP 503 upstream" in blinded and "input_tokens" in blinded


def test_the_rater_view_folds_calls_and_long_results_and_names_errors():
    html = str(render_content(trajectory.normalise(TRAJ), "trajectory", label="Response 1"))
    assert html.count('<li class="step') == 5
    assert '<details class="tool-call"><summary>' in html and "&quot;q&quot;: &quot;lyon&quot;" in html
    assert '<details class="traj-fold">' in html  # the 900-character result
    assert "Error:</strong>" in html and "HTTP 503 upstream" in html and "step-failed" in html
    assert "failed</span>" in html  # the call whose result failed says so in its summary
    assert html.count('tabindex="0"') == 1 + html.count('<pre class="traj-json"')  # one step in the tab order
    for secret in ("gpt-4o-secret", "openai", "secret-bot", "secret-agent-v2"):
        assert secret not in html


def test_scope_is_validated():
    base = {"slug": "s", "name": "S", "criteria": []}
    ok = validate_rubric({**base, "criteria": [AGENT_RUBRIC["criteria"][2]]})
    assert ok["criteria"][0]["scope"] == "steps"
    for criterion, path in [
        ({"key": "t", "name": "T", "kind": "text", "scope": "steps"}, "criteria[0].scope"),
        ({"key": "b", "name": "B", "kind": "binary", "choices": [{"value": 1}, {"value": 2}], "steps": ["user"]},
         "criteria[0].steps"),
        ({"key": "b", "name": "B", "kind": "binary", "choices": [{"value": 1}, {"value": 2}], "scope": "steps",
          "steps": ["tool"]}, "criteria[0].steps[0]"),
    ]:
        with pytest.raises(RubricError) as exc:
            validate_rubric({**base, "criteria": [criterion]})
        assert path in str(exc.value)


@pytest.fixture
def agent_study(db, admin_user):
    rows = [agent_item(0, i) for i in range(3)]
    return open_study_with_rubric(AGENT_RUBRIC, "\n".join(json.dumps(r) for r in rows), admin_user=admin_user,
                                  name="Agents", rater="agent-rater")


def _answers(a: Assignment, *, skip: str = "") -> dict:
    from annotation.step_questions import asked

    responses = {}
    for n, position in enumerate(a.permutation, start=1):
        out = a.item.outputs.get(position=position)
        block = {"task_success": 4, "answer_supported": "yes"}
        for c in AGENT_RUBRIC["criteria"][2:4]:
            block.update({q["key"]: "yes" for q in asked(c, out.content, out.kind) if q["key"] != skip})
        responses[str(n)] = block
    return {"responses": responses}


def test_per_step_questions_are_asked_stored_and_refused_by_name(agent_study, api_for):
    study, rater = agent_study
    api = api_for(rater)
    data = api.post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]
    assert all(r["kind"] == "trajectory" for r in data["responses"])
    body = json.dumps(data)
    assert "agent-gpt-4o" not in body and '"model"' not in body and "trace_id" not in body  # blinded
    a = Assignment.objects.get(token=data["token"])
    url = f"/api/studies/{study.slug}/rate/{a.token}/submit/"
    missing = api.post(url, {"answers": _answers(a, skip="call_needed@m2.t0")}, format="json")
    assert missing.status_code == 400
    assert "Step 4 · Tool call" in missing.json()["errors"]["r1__call_needed@m2.t0"]
    extra = _answers(a)
    extra["responses"]["1"]["call_needed@m9.t3"] = "yes"
    refused = api.post(url, {"answers": extra}, format="json")
    assert "no step 'm9.t3'" in refused.json()["errors"]["r1__call_needed@m9.t3"]
    whole = _answers(a)
    whole["responses"]["1"]["call_needed"] = "yes"
    assert "asked per step" in api.post(url, {"answers": whole}, format="json").json()["errors"]["r1__call_needed"]
    assert api.post(url, {"answers": _answers(a)}, format="json").status_code == 200
    keys = set(Rating.objects.filter(assignment=a).values_list("criterion", flat=True))
    assert {"task_success", "answer_supported", "call_needed@m2.t0", "turn_helpful@m2"} <= keys
    assert not any(k in keys for k in ("call_needed", "turn_helpful"))


def test_the_workspace_page_shows_steps_and_per_step_controls_blinded(agent_study, client_for):
    study, rater = agent_study
    html = client_for(rater).get(f"/studies/{study.slug}/rate/", follow=True).content.decode()
    assert 'class="traj-steps"' in html and 'data-step="m2.t0"' in html
    assert 'name="r1__call_needed@m2.t0"' in html and ": Was this tool call needed?" in html and "Step 4 · Tool call " in html
    assert "js/trajectory.js" in html
    for secret in ("agent-gpt-4o", "gpt-4o", "llama", "trace_id"):
        assert secret not in html


def test_pairwise_compares_whole_trajectories_blinded(make_study, annotator, api_for):
    """A comparative rubric on trajectory items: both runs shown whole, in the engine's order, blinded."""
    rows = "\n".join(json.dumps(agent_item(0, i)) for i in range(2))
    study = make_study("compare-pairwise", annotators=[annotator], items_text=rows, raters_per_item=1)
    data = api_for(annotator).post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]
    assert [r["kind"] for r in data["responses"]] == ["trajectory", "trajectory"]
    assert any(c["kind"] == "pairwise" for c in data["rubric"]["criteria"])
    a = Assignment.objects.get(token=data["token"])
    stored = {o.position: json.loads(o.content) for o in a.item.outputs.all()}
    shown = [json.loads(r["content"]) for r in data["responses"]]
    assert [s["messages"][-1]["content"] for s in shown] == [stored[p]["messages"][-1]["content"]
                                                              for p in a.permutation]
    for secret in ("agent-gpt-4o", "agent-llama", "gpt-4o", "llama", "trace_id"):
        assert secret not in json.dumps(data)


def test_replacing_a_trajectory_checks_it_as_an_import_does(agent_study):
    from annotation.services.item_edits import item_replace

    study, _rater = agent_study
    item = study.items.order_by("pk").last()  # not yet given to the rater
    before = {o.position: o.content for o in item.outputs.all()}
    bad = json.loads(before[0])
    bad["messages"][3]["tool_call_id"] = "call_nowhere"
    with pytest.raises(ValueError, match=r"output 1: messages\[3\]\.tool_call_id: 'call_nowhere' answers no"):
        item_replace(item=item, context=item.context, outputs={0: json.dumps(bad), 1: before[1]})
    assert {o.position: o.content for o in item.outputs.all()} == before  # nothing half-stored
    good = json.loads(before[0])
    good["messages"][-1]["content"] = "Edited answer."
    item_replace(item=item, context=item.context, outputs={0: json.dumps(good, indent=2)})
    assert json.loads(item.outputs.get(position=0).content)["messages"][-1]["content"] == "Edited answer."
