"""The assignment engine, without HTTP: slots, order, leases, attention checks, counterbalancing."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from itertools import permutations

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Assignment, Item, StudyMember
from annotation.services.assignments import (
    RaterPaused,
    _start_key,
    assignment_next,
    assignments_expire,
    attention_due,
    response_order,
    williams_design,
)
from annotation.services.ratings import assignment_submit
from tests.workspace.conftest import items_jsonl, rrgen_answers

# ---------------------------------------------------------------- Williams design (pure)


def test_williams_design_matches_the_published_squares():
    # Williams (1949): for 4 treatments the square ABDC/BCAD/CDBA/DACB; for 3 treatments the six
    # sequences ABC, BCA, CAB and their mirrors. Letters A.. are indexes 0..
    as_letters = lambda rows: ["".join("ABCDEFG"[i] for i in row) for row in rows]  # noqa: E731
    assert as_letters(williams_design(4)) == ["ABDC", "BCAD", "CDBA", "DACB"]
    assert sorted(as_letters(williams_design(3))) == sorted(["ABC", "BCA", "CAB", "CBA", "ACB", "BAC"])


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 7])
def test_williams_design_balances_positions_and_carry_over(k):
    rows = williams_design(k)
    assert len(rows) == (k if k % 2 == 0 else 2 * k)
    for row in rows:
        assert sorted(row) == list(range(k))
    # every condition equally often in every position
    for position in range(k):
        counts = Counter(row[position] for row in rows)
        assert set(counts.values()) == {len(rows) // k}
    # every ordered pair (a then b) equally often
    pairs = Counter((row[i], row[i + 1]) for row in rows for i in range(k - 1))
    assert len(pairs) == k * (k - 1)
    assert len(set(pairs.values())) == 1


def test_response_order_without_counterbalance():
    assert response_order(n_outputs=4, rotation=None, shuffle=False) == [0, 1, 2, 3]
    import random

    seen = {tuple(response_order(n_outputs=3, rotation=None, shuffle=True, rng=random.Random(s))) for s in range(60)}
    assert seen == set(permutations(range(3)))


def test_attention_due_keeps_the_rate():
    for phase in (0.0, 0.37, 0.99):
        n_att = 0
        for n in range(200):
            if attention_due(rate=0.1, n_assigned=n, n_attention=n_att, phase=phase):
                n_att += 1
        assert n_att in (20, 21)
    assert not attention_due(rate=0.0, n_assigned=10, n_attention=0, phase=0.5)


# ---------------------------------------------------------------- engine on PostgreSQL


def test_active_assignment_comes_back_first(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r])
    first = assignment_next(study=study, rater=r)
    assert first is not None and first.status == "active"
    again = assignment_next(study=study, rater=r)
    assert again.pk == first.pk
    assert Assignment.objects.filter(rater=r).count() == 1


def test_each_item_gets_raters_per_item_distinct_raters(make_study, raters):
    rs = raters(5)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(4), raters_per_item=3)
    done = Counter()
    progress = True
    while progress:
        progress = False
        for r in rs:
            a = assignment_next(study=study, rater=r)
            if a is not None:
                assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1000)
                done[r.pk] += 1
                progress = True
    per_item = Counter(Assignment.objects.filter(status="submitted").values_list("item_id", flat=True))
    assert sorted(per_item.values()) == [3, 3, 3, 3]
    pairs = list(Assignment.objects.values_list("item_id", "rater_id"))
    assert len(pairs) == len(set(pairs)) == 12
    assert all(assignment_next(study=study, rater=r) is None for r in rs)
    assert set(Item.objects.filter(study=study).values_list("slots_taken", flat=True)) == {3}


def test_item_order_differs_between_raters(make_study, raters):
    """Each rater walks the study's random order from a starting point of their own: raters whose
    starts fall between different items get different sequences (two starts in the same gap share
    one, which the design allows)."""
    rs = raters(4)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(40), raters_per_item=4)
    keys = dict(Item.objects.filter(study=study).values_list("id", "pick_key"))
    ring = sorted(keys, key=keys.get)
    assert ring != sorted(ring)  # a random order, not the upload order

    def walk_from(start: int) -> tuple[int, ...]:
        k = next((n for n, item in enumerate(ring) if keys[item] > start), 0)
        return tuple(ring[(k + j) % len(ring)] for j in range(6))

    firsts = []
    for r in rs:
        order = []
        for _ in range(6):
            a = assignment_next(study=study, rater=r)
            order.append(a.item_id)
            assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)
        firsts.append(tuple(order))
    expected = [walk_from(_start_key(study, r)) for r in rs]
    assert firsts == expected
    assert len({_start_key(study, r) for r in rs}) == 4


def test_item_order_follows_upload_when_not_randomised(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(5), randomize_items=False)
    ids = []
    for _ in range(5):
        a = assignment_next(study=study, rater=r)
        ids.append(a.item.external_id)
        assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)
    assert ids == [f"it-{i:04d}" for i in range(5)]


def test_counterbalancing_puts_each_system_once_in_each_position(make_study, raters):
    rs = raters(3)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(6), raters_per_item=3,
                       counterbalance=True)
    for r in rs:
        while (a := assignment_next(study=study, rater=r)) is not None:
            assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)
    for item in Item.objects.filter(study=study):
        perms = list(Assignment.objects.filter(item=item).values_list("permutation", flat=True))
        assert len(perms) == 3
        for position in range(3):
            assert sorted(p[position] for p in perms) == [0, 1, 2]
    # across the study, each system is shown first equally often
    first = Counter(p[0] for p in Assignment.objects.values_list("permutation", flat=True))
    assert set(first.values()) == {6}


def test_expired_assignments_go_back_to_the_pool(make_study, raters, settings):
    a_rater, b_rater = raters(2)
    study = make_study("rrgen-001", annotators=[a_rater, b_rater], items_text=items_jsonl(1), raters_per_item=1)
    held = assignment_next(study=study, rater=a_rater)
    assert assignment_next(study=study, rater=b_rater) is None  # the only slot is taken
    Assignment.objects.filter(pk=held.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    taken = assignment_next(study=study, rater=b_rater)
    assert taken is not None and taken.item_id == held.item_id and taken.rater_id == b_rater.pk
    held.refresh_from_db()
    assert held.status == "expired" and held.slot is None
    assert assignments_expire(study=study) == 0


def test_expired_assignment_is_retaken_with_its_draft(make_study, raters, settings):
    settings.ASSIGNMENT_SWEEP_SECONDS = 0  # sweep on every call, not only now and then
    r1, r2 = raters(2)
    study = make_study("rrgen-001", annotators=[r1, r2], items_text=items_jsonl(1), raters_per_item=2)
    a = assignment_next(study=study, rater=r1)
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1),
                                              draft={"responses": {"1": {"fluency": 4}}})
    assert assignment_next(study=study, rater=r2) is not None  # r2's call sweeps r1's lease away
    a.refresh_from_db()
    assert a.status == "expired"
    again = assignment_next(study=study, rater=r1)
    assert again.pk == a.pk and again.status == "active" and again.slot is not None
    assert again.draft["responses"]["1"]["fluency"] == 4


def test_a_wrong_slot_hint_heals_itself(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(2), raters_per_item=1)
    Item.objects.filter(study=study).update(slots_taken=1)  # as if rows had changed outside the engine
    assert assignment_next(study=study, rater=r) is not None


def test_paused_rater_gets_no_work(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r])
    StudyMember.objects.filter(user=r).update(paused=True)
    with pytest.raises(RaterPaused):
        assignment_next(study=study, rater=r)


def test_closed_or_draft_study_gives_no_work(make_study, raters):
    r1, r2 = raters(2)
    closed = make_study("rrgen-001", annotators=[r1], status="closed")
    draft = make_study("aqua-003", annotators=[r2], status="draft")
    assert assignment_next(study=closed, rater=r1) is None
    assert assignment_next(study=draft, rater=r2) is None


def test_database_refuses_a_second_holder_of_a_slot(make_study, raters):
    r1, r2 = raters(2)
    study = make_study("rrgen-001", annotators=[r1, r2], items_text=items_jsonl(1), raters_per_item=2)
    a = assignment_next(study=study, rater=r1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(study=study, item_id=a.item_id, rater=r2, slot=a.slot, permutation=[0, 1, 2])


def test_attention_checks_mixed_in_at_the_rate(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(30, attention=10),
                       attention_check_rate=0.25, raters_per_item=1)
    kinds = []
    while (a := assignment_next(study=study, rater=r)) is not None:
        kinds.append(a.is_attention_check)
        assert a.is_attention_check == a.item.is_attention_check
        assignment_submit(assignment=a, answers=rrgen_answers(3, value=7), time_on_task_ms=1)
    regular = kinds.count(False)
    assert regular == 30
    # one check in four items while regular work lasts: 30 regular items come with 9 or 10 checks
    # (the per-rater phase decides whether the tenth falls before or after the last regular item)
    assert kinds.count(True) in (9, 10)
    assert kinds[-1] is False  # never a check after the regular work is gone
    for n in (8, 20, len(kinds)):
        assert abs(kinds[:n].count(True) - 0.25 * n) <= 1


def test_attention_items_do_not_consume_regular_slots_nor_come_alone(make_study, raters):
    r1, r2 = raters(2)
    study = make_study("rrgen-001", annotators=[r1, r2], items_text=items_jsonl(2, attention=1),
                       attention_check_rate=1.0, raters_per_item=1)
    served = []
    while (a := assignment_next(study=study, rater=r1)) is not None:
        served.append(a.is_attention_check)
        assignment_submit(assignment=a, answers=rrgen_answers(3, value=7), time_on_task_ms=1)
    # the gold item first (the rate is 1), then both regular items: the check took no regular slot
    assert served == [True, False, False]
    # r2 finds no regular work left, so no check is served alone either
    assert assignment_next(study=study, rater=r2) is None
    assert not Assignment.objects.filter(rater=r2).exists()


def test_attention_counts_leave_out_training_and_expired_assignments(make_study, raters):
    """The engine's index-only counts equal the counts of the rater's own assignments joined to their
    items (the formula they replace), with training, expired and other raters' assignments about."""
    from django.db.models import Count, Q

    from annotation.services.assignments import _attention_counts

    r, other = raters(2)
    study = make_study("rrgen-001", annotators=[r, other], items_text=items_jsonl(12, attention=4), raters_per_item=2)
    items = list(Item.objects.filter(study=study).order_by("id"))
    Item.objects.filter(pk__in=[items[0].pk, items[1].pk, items[12].pk]).update(is_training=True,
                                                                                 is_attention_check=True)
    plan = [(0, "submitted"), (1, "expired"), (2, "submitted"), (3, "active"), (4, "expired"), (5, "submitted"),
            (12, "submitted"), (13, "submitted"), (14, "expired"), (15, "active")]
    for i, status in plan:
        item = Item.objects.get(pk=items[i].pk)
        Assignment.objects.create(study=study, item=item, rater=r, status=status, slot=None, permutation=[0, 1, 2],
                                  is_attention_check=item.is_attention_check)
    Assignment.objects.create(study=study, item=items[6], rater=other, status="submitted", slot=0,
                              permutation=[0, 1, 2])

    def reference(rater) -> tuple[int, int]:
        c = Assignment.objects.filter(study=study, rater=rater).exclude(status="expired").aggregate(
            total=Count("id", filter=Q(item__is_training=False)),
            attention=Count("id", filter=Q(is_attention_check=True, item__is_training=False)))
        return c["total"], c["attention"]

    # regular: 2, 3, 5 (1 and 4 expired); checks: 13, 15 (14 expired); training 0, 12 left out (1 expired)
    assert _attention_counts(study.pk, r.pk) == reference(r) == (5, 2)
    assert _attention_counts(study.pk, other.pk) == reference(other) == (1, 0)
