"""Judges and humans in one loop: doubt signals, and doubtful items copied into a human study."""

from __future__ import annotations

import pytest

from annotation.models import Item
from annotation.services.assignments import assignment_next
from judges.services.doubt import Thresholds, doubtful_items
from judges.services.handoff import HandoffError, doubtful_send_to_study


def row(item, criterion="fluency", run=1, status="scored", value=4, score=None, doubt=None, output=10):
    return {"item": item, "output": output, "criterion": criterion, "run": run, "status": status, "value": value,
            "score": value if score is None and isinstance(value, (int, float)) else score, "doubt": doubt or {}}


def test_each_signal_and_its_threshold():
    rows = [
        row("sure"),
        row("lowprob", doubt={"top_prob": 0.45}),
        row("highprob", doubt={"top_prob": 0.9}),
        row("flip", doubt={"swap_disagreement": True}),
        row("spread", doubt={"spread": 1.4}),
        row("tight", doubt={"spread": 0.3}),
        row("split-label", doubt={"agreement": 0.4}),
        row("escalated", doubt={"small_expert_disagree": True}),
        row("failed", status="unparsed", value=None),
    ]
    found = doubtful_items(rows)
    assert {k: v["reasons"] for k, v in found.items()} == {
        "lowprob": ["low_confidence"], "flip": ["swap_disagreement"], "spread": ["inconsistent"],
        "split-label": ["inconsistent"], "escalated": ["escalated_disagreement"], "failed": ["judge_failed"]}
    assert "highprob" in doubtful_items(rows, Thresholds(min_top_prob=0.95))
    assert set(doubtful_items(rows, signals=["judge_failed"])) == {"failed"}


def test_judges_disagree_across_runs():
    rows = [row("near", run=1, value=4), row("near", run=2, value=5),
            row("far", run=1, value=2), row("far", run=2, value=6),
            row("labels", "decision", run=1, value="ACCEPT", score=1.0),
            row("labels", "decision", run=2, value="REJECT", score=0.0),
            row("same-run", run=1, value=1), row("same-run", run=1, value=7, output=11)]
    found = doubtful_items(rows)
    assert set(found) == {"far", "labels"}
    assert found["far"]["slots"] == [(10, "fluency", "judges_disagree")]
    assert "near" in doubtful_items(rows, Thresholds(min_range=1))


@pytest.fixture
def aqua_pair(make_study, make_judge, make_run, annotator, preset_version):
    from annotation.services.studies import study_create, study_members_add

    source = make_study("aqua-003")
    target = study_create(name="AQUA human review", slug="aqua-humans", rubric_version=preset_version["aqua-003"],
                          raters_per_item=1)
    study_members_add(study=target, usernames=[annotator.username], role="annotator")
    small = make_judge("small", method="label")
    big = make_judge("big", method="label")
    make_run(source, small, {("aq-001", 0, "label"): "TP", ("aq-002", 0, "label"): "TP",
                             ("aq-003", 0, "label"): ("", "unparsed", {}), ("aq-004", 0, "label"): "FP2"})
    make_run(source, big, {("aq-001", 0, "label"): "TP", ("aq-002", 0, "label"): "FP3",
                           ("aq-003", 0, "label"): "FP3", ("aq-004", 0, "label"): "FP2"})
    return source, target


def test_doubtful_items_are_copied_once_with_provenance_and_served_to_raters(aqua_pair, annotator):
    from annotation.services.studies import study_set_status

    source, target = aqua_pair
    runs = list(source.judge_runs.all())
    result = doubtful_send_to_study(source=source, runs=runs, target=target)
    assert sorted(result.sent) == ["aq-002", "aq-003"]  # runs disagree; one judge failed
    assert result.reasons == {"judges_disagree": 1, "judge_failed": 1}
    copied = Item.objects.get(study=target, external_id="aq-002")
    original = Item.objects.get(study=source, external_id="aq-002")
    assert copied.context == original.context and copied.gold == original.gold
    assert [o.content for o in copied.outputs.all()] == [o.content for o in original.outputs.all()]
    assert copied.metadata["concord_doubt"]["reasons"] == ["judges_disagree"]
    assert copied.metadata["concord_doubt"]["source_study"] == source.slug

    again = doubtful_send_to_study(source=source, runs=runs, target=target)
    assert again.sent == [] and sorted(again.already_there) == ["aq-002", "aq-003"]
    assert again.summary == "Sent 0 items: all 2 doubtful items are already in aqua-humans."
    assert target.items.count() == 2

    study_set_status(study=target, status="open")
    served = {assignment_next(study=target, rater=annotator).item.external_id}
    assert served <= {"aq-002", "aq-003"}


def test_handoff_refuses_the_same_study_and_another_rubric(aqua_pair, preset_version):
    from annotation.services.studies import study_create

    source, _ = aqua_pair
    runs = list(source.judge_runs.all())
    with pytest.raises(HandoffError, match="already in this one"):
        doubtful_send_to_study(source=source, runs=runs, target=source)
    other = study_create(name="RRGen humans", rubric_version=preset_version["rrgen-001"])
    with pytest.raises(HandoffError, match="another rubric"):
        doubtful_send_to_study(source=source, runs=runs, target=other)


def test_doubt_pages(aqua_pair, client_for, admin_user, researcher, annotator):
    from annotation.services.studies import study_members_add

    source, target = aqua_pair
    study_members_add(study=source, usernames=[researcher.username], role="researcher")
    page = client_for(researcher).get(f"/judges/studies/{source.slug}/doubt/").content.decode()
    assert "aq-002" in page and "judges_disagree" in page and "aq-001" not in page
    # a researcher may look but not send
    assert client_for(researcher).post(f"/judges/studies/{source.slug}/doubt/",
                                       {"target": target.pk}).status_code == 404
    assert client_for(annotator).get(f"/judges/studies/{source.slug}/doubt/").status_code == 404
    assert target.items.count() == 0
    resp = client_for(admin_user).post(f"/judges/studies/{source.slug}/doubt/",
                                       {"target": target.pk, "signals": ["judge_failed"]}, follow=True)
    assert "AQUA human review: Sent 1 item (judge_failed 1)" in resp.content.decode()
    assert list(target.items.values_list("external_id", flat=True)) == ["aq-003"]


def test_sending_nothing_says_why(aqua_pair, client_for, admin_user):
    """One run chosen, asked only for signals its method cannot carry: 0 sent, and each reason named."""
    source, target = aqua_pair
    small = source.judge_runs.order_by("pk").first()
    result = doubtful_send_to_study(source=source, runs=[small], target=target,
                                    signals=["low_confidence", "judges_disagree", "swap_disagreement"])
    assert result.sent == []
    assert "no score carries a probability" in result.why_none
    assert "only one run was chosen" in result.why_none
    assert "no run judged pairs with a swap" in result.why_none
    resp = client_for(admin_user).post(f"/judges/studies/{source.slug}/doubt/",
                                       {"target": target.pk, "runs": [small.pk], "signals": ["judges_disagree"]},
                                       follow=True)
    page = resp.content.decode()
    assert "Sent 0 items: no item was doubtful (judges disagree: only one run was chosen" in page
    assert target.items.count() == 0
