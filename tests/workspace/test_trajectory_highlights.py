"""Issue 56 §1: highlights inside a turn. A per-step `spans` criterion is asked of each matching step
that has text; its offsets index the step's text (trajectory.step_text, the text the rater sees and
selects in), are checked on submit with an error naming the step, and come back in the ratings
download with the criterion `<key>@<step>` and kind `spans`."""

from __future__ import annotations

import html
import json
import re

import pytest

from annotation import trajectory
from annotation.datasets import export_chunks
from annotation.models import Assignment, Rating
from annotation.rendering import render_content
from annotation.step_questions import asked, text_of
from rubrics.loader import RubricError, validate_rubric
from tests.workspace.conftest import open_study_with_rubric

CALL = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"lyon\"}"}}
TRAJ = {"messages": [
    {"role": "user", "content": "Trains to Lyon?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"trains\": []}"},
    {"role": "assistant", "content": "The 07:04 TGV costs €54. Book it now!"}]}
FINAL = "The 07:04 TGV costs €54. Book it now!"
HIGHLIGHT = {"key": "unsupported", "name": "Unsupported claims", "kind": "spans", "scope": "assistant_turns",
             "labels": ["unsupported claim"], "required": False}
RUBRIC = {"slug": "traj-highlights", "name": "Trajectory highlights", "criteria": [
    {"key": "ok", "name": "Fine?", "kind": "binary", "choices": [{"value": "yes"}, {"value": "no"}]},
    HIGHLIGHT,
    {"key": "evidence", "name": "Evidence in results", "kind": "spans", "scope": "steps",
     "steps": ["tool_result", "tool_call"], "required": False}]}


def test_a_spans_criterion_may_be_asked_per_step_and_text_still_may_not():
    assert validate_rubric({"slug": "s", "name": "S", "criteria": [HIGHLIGHT]})["criteria"][0]["scope"] == \
        "assistant_turns"
    with pytest.raises(RubricError, match=r"criteria\[0\]\.scope"):
        validate_rubric({"slug": "s", "name": "S", "criteria": [
            {"key": "t", "name": "T", "kind": "text", "scope": "assistant_turns"}]})


def test_asked_of_steps_with_text_only_and_never_of_the_whole_trajectory():
    content = trajectory.normalise(TRAJ)
    assert [q["key"] for q in asked(HIGHLIGHT, content, "trajectory")] == ["unsupported@m3"]  # m1 has no text
    whole = {**HIGHLIGHT, "scope": "trajectory"}
    assert asked(whole, content, "trajectory") == []  # offsets into the stored JSON would mean nothing
    assert asked(whole, "plain text", "text") == [whole]
    evidence = RUBRIC["criteria"][2]
    assert [q["key"] for q in asked(evidence, content, "trajectory")] == ["evidence@m1.t0", "evidence@m2"]
    assert text_of(content, "m3") == FINAL
    assert text_of(content, "m2") == '{\n  "trains": []\n}'  # JSON as shown: indented by 2
    assert text_of(content, "m1.t0") == '{\n  "q": "lyon"\n}'
    assert text_of(content, "m9") == ""


def test_each_step_text_is_marked_as_the_highlight_root_with_exactly_that_text():
    content = trajectory.normalise(TRAJ)
    page = str(render_content(content, "trajectory", span_root=True, label="Response 1"))
    roots = {}
    for step in re.findall(r'<li class="step[^"]*" data-step="([^"]+)"', page):
        li = page.split(f'data-step="{step}"', 1)[1].split("</li>", 1)[0]
        found = re.findall(r"<(?:div|pre)[^>]*data-span-root[^>]*>(.*?)</(?:div|pre)>", li, re.S)
        if found:
            roots[step] = html.unescape(found[0])
    data = trajectory.parse(content)
    assert roots == {s.key: trajectory.step_text(s) for s in trajectory.steps(data) if trajectory.step_text(s)}
    assert "data-span-root" not in str(render_content(content, "trajectory", label="Response 1"))


@pytest.fixture
def highlight_study(db, admin_user):
    row = {"id": "h1", "context": "Trains?", "outputs": [{"system": "s", "kind": "trajectory", "content": TRAJ}]}
    return open_study_with_rubric(RUBRIC, json.dumps(row), admin_user=admin_user, name="Highlights",
                                  rater="hl-rater")


def _submit(api, study, answers: dict):
    data = api.post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]
    url = f"/api/studies/{study.slug}/rate/{data['token']}/submit/"
    return api.post(url, {"answers": {"responses": {"1": {"ok": "yes", **answers}}}}, format="json"), data


def test_offsets_outside_the_step_or_not_matching_it_are_refused_by_name(highlight_study, api_for):
    study, rater = highlight_study
    api = api_for(rater)
    name = "r1__unsupported@m3"
    outside, data = _submit(api, study, {"unsupported@m3": [{"start": 4, "end": 90}]})
    assert outside.status_code == 400
    assert outside.json()["errors"][name] == (
        f"Response 1: Step 5 · Assistant: Unsupported claims: highlight 4-90 lies outside the step's text "
        f"(length {len(FINAL)})")
    wrong, _ = _submit(api, study, {"unsupported@m3": [{"start": 0, "end": 3, "text": "Trains"}]})
    assert "does not match the step's text: it reads 'The'" in wrong.json()["errors"][name]
    no_text, _ = _submit(api, study, {"unsupported@m1": [{"start": 0, "end": 3}]})
    assert "no step 'm1' is asked about" in no_text.json()["errors"]["r1__unsupported@m1"]
    whole, _ = _submit(api, study, {"unsupported": [{"start": 0, "end": 3}]})
    assert "asked per step" in whole.json()["errors"]["r1__unsupported"]
    assert not Rating.objects.filter(assignment__study=study).exists()


def test_a_step_highlight_is_stored_and_exported_with_its_step(highlight_study, api_for):
    study, rater = highlight_study
    api = api_for(rater)
    claim = FINAL.index("€54")
    spans = [{"start": claim, "end": claim + 3, "text": "€54", "label": "unsupported claim"}]
    evidence = [{"start": 9, "end": 15}]  # `"lyon"` in the arguments as shown: '{\n  "q": "lyon"\n}'
    ok, data = _submit(api, study, {"unsupported@m3": spans, "evidence@m1.t0": evidence})
    assert ok.status_code == 200, ok.json()
    stored = dict(Rating.objects.filter(assignment__token=data["token"]).values_list("criterion", "value"))
    assert stored["unsupported@m3"] == spans
    assert stored["evidence@m1.t0"] == [{"start": 9, "end": 15, "text": '"lyon"', "label": ""}]
    assert Assignment.objects.get(token=data["token"]).status == Assignment.Status.SUBMITTED
    rows = {r["criterion"]: r for r in map(json.loads, b"".join(export_chunks(study, "jsonl")).decode().splitlines())}
    assert rows["unsupported@m3"]["criterion_kind"] == "spans" and rows["unsupported@m3"]["value"] is None
    assert rows["unsupported@m3"]["spans"] == spans
    assert rows["evidence@m1.t0"]["spans"][0]["text"] == '"lyon"'
    assert rows["ok"]["criterion_kind"] == "binary"
    csv_text = b"".join(export_chunks(study, "csv")).decode()
    line = next(x for x in csv_text.splitlines() if "unsupported@m3" in x)
    assert ",spans," in line and "unsupported claim" in line and "€54" in line


def test_the_workspace_form_carries_a_step_highlight_as_json():
    from annotation.services.ratings import answers_from_form

    rubric = validate_rubric(RUBRIC)
    spans = [{"start": 0, "end": 3, "text": "The", "label": ""}]
    answers = answers_from_form({"r1__ok": "yes", "r1__unsupported@m3": json.dumps(spans),
                                 "r1__evidence@m2": "[]", "r1__evidence@m1.t0": "{broken"},
                                rubric=rubric, n_responses=1)
    block = answers["responses"]["1"]
    assert block["unsupported@m3"]["value"] == spans
    assert "evidence@m2" not in block  # an empty list: nothing highlighted, as for a whole-response question
    assert block["evidence@m1.t0"]["value"] == "invalid"
