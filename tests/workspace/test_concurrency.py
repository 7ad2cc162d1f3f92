"""Real threads on real PostgreSQL: raters pulling work at once never share or repeat a slot."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict

import pytest
from django.db import connection

from annotation.models import Assignment, Item, Rating
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from tests.workspace.conftest import items_jsonl, rrgen_answers


def _run_threads(n: int, target) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def wrapped(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            target(i)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a rater thread hung"
    return errors


@pytest.mark.django_db(transaction=True)
def test_twenty_raters_pulling_at_once_fill_every_item_with_three_distinct_raters(make_study, raters):
    rs = raters(20)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(40), raters_per_item=3)
    done: dict[int, list[int]] = defaultdict(list)

    def work(i: int) -> None:
        rater = rs[i]
        while (a := assignment_next(study=study, rater=rater)) is not None:
            assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=5)
            done[rater.pk].append(a.item_id)

    assert _run_threads(20, work) == []
    per_item = defaultdict(list)
    for item_id, rater_id, status in Assignment.objects.values_list("item_id", "rater_id", "status"):
        assert status == "submitted"
        per_item[item_id].append(rater_id)
    assert len(per_item) == 40
    for item_id, rater_ids in per_item.items():
        assert len(rater_ids) == 3 and len(set(rater_ids)) == 3, item_id
    assert sum(len(v) for v in done.values()) == 120
    for items in done.values():
        assert len(items) == len(set(items))  # nobody twice on an item
    assert Rating.objects.count() == 120 * 15  # 3 responses x 5 required criteria, each once
    assert set(Item.objects.filter(study=study).values_list("slots_taken", flat=True)) == {3}


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_pulls_never_over_assigns(make_study, raters):
    rs = raters(20)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(5), raters_per_item=3)
    got: list[int | None] = [None] * 20

    def pull(i: int) -> None:
        a = assignment_next(study=study, rater=rs[i])
        got[i] = a.item_id if a else None

    assert _run_threads(20, pull) == []
    held = Counter(x for x in got if x is not None)
    assert sum(held.values()) == 15  # exactly the 5 x 3 slots, five raters get nothing
    assert set(held.values()) == {3}


@pytest.mark.django_db(transaction=True)
def test_simultaneous_double_submit_stores_each_rating_once(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(1), raters_per_item=1)
    a = assignment_next(study=study, rater=r)

    def submit(i: int) -> None:
        assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=10)

    assert _run_threads(8, submit) == []
    assert Rating.objects.filter(assignment=a).count() == 15
    keys = list(Rating.objects.values_list("output_id", "criterion"))
    assert len(keys) == len(set(keys))


@pytest.mark.django_db(transaction=True)
def test_one_raters_calls_at_once_share_one_assignment(make_study, raters):
    """Eight tabs of one rater ask for work at the same moment, ten times over: each round they all get
    the same item and the rater never holds two (their calls queue on the rater's lock, and what each
    reads after it includes the assignment the one before them took)."""
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(30))
    for _ in range(10):
        got: list[int] = []
        errors = _run_threads(8, lambda i: got.append(assignment_next(study=study, rater=r).pk))
        assert not errors, errors
        assert len(got) == 8 and len(set(got)) == 1, got
        assert Assignment.objects.filter(rater=r, status="active").count() == 1
        assignment_submit(assignment=Assignment.objects.with_item(id=got[0]), answers=rrgen_answers(3),
                          time_on_task_ms=10)
    assert Assignment.objects.filter(rater=r, status="submitted").count() == 10
