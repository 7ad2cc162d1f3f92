"""The loop_x10 bench's studies (written by PostgreSQL, not imported) serve the loop as an imported
study does: distinct random pick keys, three outputs an item, every item given to at most
raters_per_item raters, a counterbalanced order per slot, and the bench's audit finds nothing wrong."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Assignment, Item, Study
from annotation.services.assignments import assignment_next, study_response_order
from annotation.services.ratings import assignment_submit
from bench.bench_loop_x10 import _fill
from bench.loadclient import audit, setup_study
from tests.workspace.conftest import rrgen_answers

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_generated_study_is_served_exactly_once_and_counterbalanced():
    slug, sessions = setup_study(40, "k" * 50, raters=4, raters_per_item=3, user_prefix="gen", fill=_fill)
    study = Study.objects.get(slug=slug)
    assert len(sessions) == 4 and study.status == Study.Status.OPEN
    items = Item.objects.filter(study=study)
    assert items.count() == 40
    assert len(set(items.values_list("pick_key", flat=True))) == 40  # the column's random default
    assert {item.outputs.count() for item in items} == {3}
    acknowledged = set()
    for rater in get_user_model().objects.filter(username__startswith="gen-"):
        for _ in range(20):  # 80 of the 120 slots: every rater still finds items open to them
            a = assignment_next(study=study, rater=rater)
            a.study = study
            assignment_submit(assignment=a, answers=rrgen_answers(3))
            acknowledged.add(str(a.token))
    for a in Assignment.objects.filter(study=study):
        order = study_response_order(study, item_id=a.item_id, slot=a.slot, n_outputs=3)
        assert a.permutation == order  # positions 0..2 stand in upload order, so the order is the permutation
    report = audit(slug, acknowledged)
    assert report["acknowledged"] == 80
    assert all(report[k] == 0 for k in ("lost_or_incomplete", "duplicate_ratings", "stored_not_acknowledged",
                                        "over_assigned_items", "rater_item_twice"))
