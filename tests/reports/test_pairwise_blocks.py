"""The Comparisons section's pairwise sums kept per block of assignment ids (annotation.reports.pairwise_blocks):
after every kind of change a study sees, the sums from kept blocks equal a full read's, which equal the
answer-by-answer path's section; and only the blocks that changed are read again.

Real commits (transaction=True): a late-committing writer needs its own connection, and the blocks are
then read on several connections as in production.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import Assignment, Item, Output, Rating
from annotation.reports import pairwise_blocks
from annotation.reports.comparisons import comparisons_section
from annotation.reports.pairwise_blocks import forget, pairwise_sums_incremental
from annotation.reports.pairwise_sums import pairwise_sums
from annotation.simulation.latent import Knobs
from annotation.simulation.study import simulated_study_create
from tests.conftest import make_user
from tests.reports.test_comparisons_report import _answer_by_answer

pytestmark = pytest.mark.django_db(transaction=True)

KEYS = ["preference"]
BLOCK = pairwise_blocks.BLOCK_IDS  # the triggers' blocks (2**16 assignment ids), as in production


@pytest.fixture
def study(settings):
    """The study's 60 assignments fill several blocks: assignment ids here step by 1/16 of a block."""
    settings.BULK_READ_WORKERS = 2
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {Assignment._meta.db_table} ALTER COLUMN id SET INCREMENT BY {BLOCK // 16}")
    try:
        yield simulated_study_create(preset="compare-pairwise", slug="blocks-pairwise", n_items=12, n_raters=5,
                                     seed=4, knobs=Knobs(noise=0.4, position_bias=0.6)).study
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {Assignment._meta.db_table} ALTER COLUMN id SET INCREMENT BY 1")


@pytest.fixture
def reads(monkeypatch):
    """The blocks each report read again, and its reads of the study's outputs: "all", "of blocks" (the
    outputs of the blocks read) or "new" (above an id)."""
    seen = {"blocks": [], "outputs": []}
    real_tables, real_outputs = pairwise_blocks._block_tables, pairwise_blocks._read_outputs

    def tables(study, keys, blocks):
        seen["blocks"].append(list(blocks))
        return real_tables(study, keys, blocks)

    def outputs(study, blocks=None, *, after=None):
        seen["outputs"].append("all" if blocks is None and after is None else "of blocks" if blocks else "new")
        return real_outputs(study, blocks, after=after)

    monkeypatch.setattr(pairwise_blocks, "_block_tables", tables)
    monkeypatch.setattr(pairwise_blocks, "_read_outputs", outputs)
    return seen


def _vote(study, item, rater, shown: list, winner) -> Assignment:
    """One submitted pairwise answer (the shape assignment_submit stores)."""
    a = Assignment.objects.create(study=study, item=item, rater=rater, status=Assignment.Status.SUBMITTED,
                                  permutation=[0, 1], submitted_at=timezone.now())
    Rating.objects.create(assignment=a, criterion="preference", value={"shown": shown, "winner": winner})
    return a


def _same(got, expected) -> None:
    if expected is None:
        assert got is None
        return
    assert got.systems == expected.systems
    assert got.wins.shape == expected.wins.shape and np.array_equal(got.wins, expected.wins)
    assert (got.n_answers, got.n_raters, got.n_items, got.first_wins, got.decided) == (
        expected.n_answers, expected.n_raters, expected.n_items, expected.first_wins, expected.decided)


def _check(study) -> dict:
    """Kept blocks == a full read == from an empty cache; the section == the answer-by-answer path."""
    kept = pairwise_sums_incremental(study, KEYS)
    full = pairwise_sums(study, KEYS)
    _same(kept["preference"], full["preference"])
    expected = _answer_by_answer(study, "preference")
    section = comparisons_section(study)["preference"]
    assert {k: section[k] for k in expected} == expected
    forget(study, KEYS)
    _same(pairwise_sums_incremental(study, KEYS)["preference"], full["preference"])
    return expected


def _pair(item) -> list[int]:
    return list(Output.objects.filter(item=item).order_by("position").values_list("pk", flat=True)[:2])


def test_kept_blocks_equal_a_full_read_after_every_kind_of_change(study):
    first = _check(study)
    assert first["n_answers"] == 60
    items = list(Item.objects.filter(study=study).order_by("id"))
    ratings = Rating.objects.filter(assignment__study=study, criterion="preference").order_by("id")

    # New answers appended by a new rater.
    newcomer = make_user("newcomer")
    for item in items[:5]:
        shown = _pair(item)
        _vote(study, item, newcomer, shown, shown[0])
    assert _check(study)["n_answers"] == 65

    # A value edited without touching updated_at (QuerySet.update), then a rating deleted (erasure).
    edited = ratings[3]
    flipped = [s for s in edited.value["shown"] if s != edited.value["winner"]][:1] or ["tie"]
    Rating.objects.filter(pk=edited.pk).update(value={**edited.value, "winner": flipped[0]})
    _check(study)
    Rating.objects.filter(pk=ratings[10].pk).delete()
    assert _check(study)["n_answers"] == 64

    # An assignment ignored, then un-ignored; an attention-check flag set; one un-submitted.
    target = ratings[20].assignment_id
    Assignment.objects.filter(pk=target).update(ignored=True)
    assert _check(study)["n_answers"] == 63
    Assignment.objects.filter(pk=target).update(ignored=False)
    assert _check(study)["n_answers"] == 64
    Assignment.objects.filter(pk=ratings[30].assignment_id).update(is_attention_check=True)
    assert _check(study)["n_answers"] == 63
    Assignment.objects.filter(pk=ratings[31].assignment_id).update(status=Assignment.Status.ACTIVE)
    assert _check(study)["n_answers"] == 62

    # An answer given to another rater (who had not seen that item).
    moved = ratings[40].assignment
    Assignment.objects.filter(pk=moved.pk).update(rater=make_user("stand-in"))
    _check(study)

    # A new system's outputs: a new item, voted on; then two systems of an old item swapped.
    fresh = Item.objects.create(study=study, external_id="fresh", context="New request")
    Output.objects.create(item=fresh, position=0, system="sys-new", content="A")
    Output.objects.create(item=fresh, position=1, system=items[0].outputs.order_by("position")[0].system, content="B")
    shown = _pair(fresh)
    _vote(study, fresh, newcomer, shown, shown[0])
    assert "sys-new" in _check(study)["systems"]
    old = list(Output.objects.filter(item=items[1]).order_by("position")[:2])
    Output.objects.filter(pk=old[0].pk).update(system=old[1].system)
    Output.objects.filter(pk=old[1].pk).update(system=old[0].system)
    _check(study)

    # A transaction that commits after a report was computed, with ids below rows already counted.
    late_rater, early_rater = make_user("late"), make_user("early")
    opened, release = threading.Event(), threading.Event()
    late_ids = []

    def late_writer():
        with transaction.atomic():
            late_ids.append(_vote(study, items[2], late_rater, _pair(items[2]), "tie").pk)
            opened.set()
            release.wait(30)
        connection.close()

    writer = threading.Thread(target=late_writer)
    writer.start()
    assert opened.wait(30)
    early = _vote(study, items[2], early_rater, _pair(items[2]), _pair(items[2])[1])
    before = _check(study)
    release.set()
    writer.join()
    assert late_ids[0] < early.pk
    after = _check(study)
    assert after["n_answers"] == before["n_answers"] + 1

    # An answer naming another item's output (never written so), one read in another block only: the
    # full read resolves it, so the kept blocks must give way to it.
    other = _pair(fresh)
    odd = ratings[0]
    Rating.objects.filter(pk=odd.pk).update(value={"shown": [other[0], odd.value["shown"][1]], "winner": "tie"})
    _check(study)

    # An answer not showing two outputs: None, as the full read says (the answer-by-answer path).
    Rating.objects.filter(pk=ratings[5].pk).update(value={**ratings[5].value, "shown": other + [other[0]]})
    assert pairwise_sums_incremental(study, KEYS) == {"preference": None}
    _check(study)


def test_only_the_blocks_that_changed_are_read_again(study, reads):
    assignments = Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED)
    every = sorted({pk // BLOCK for pk in assignments.values_list("pk", flat=True)})
    pairwise_sums_incremental(study, KEYS)
    assert reads == {"blocks": [every], "outputs": ["all"]} and len(every) >= 4

    pairwise_sums_incremental(study, KEYS)  # nothing changed: nothing read
    assert reads == {"blocks": [every], "outputs": ["all"]}

    item = Item.objects.filter(study=study).order_by("id").first()
    shown = _pair(item)
    added = _vote(study, item, make_user("appender"), shown, "tie")
    got = pairwise_sums_incremental(study, KEYS)
    assert reads["blocks"][-1] == [added.pk // BLOCK] and reads["outputs"][1:] == ["of blocks"]
    _same(got["preference"], pairwise_sums(study, KEYS)["preference"])

    # A new item with a new system's outputs: only the new outputs are read, the old blocks kept.
    fresh = Item.objects.create(study=study, external_id="fresh", context="New request")
    Output.objects.create(item=fresh, position=0, system="sys-new", content="A")
    Output.objects.create(item=fresh, position=1, system="sys-newer", content="B")
    shown = _pair(fresh)
    added = _vote(study, fresh, make_user("appender-2"), shown, shown[1])
    got = pairwise_sums_incremental(study, KEYS)
    assert reads["blocks"][-1] == [added.pk // BLOCK] and reads["outputs"][2:] == ["new", "of blocks"]
    _same(got["preference"], pairwise_sums(study, KEYS)["preference"])

    # An output added to an old item: the blocks holding its answers are read again.
    Output.objects.create(item=item, position=5, system="sys-late", content="C")
    got = pairwise_sums_incremental(study, KEYS)
    holding = sorted({pk // BLOCK for pk in assignments.filter(item=item).values_list("pk", flat=True)})
    # The blocks' own outputs, unless the item's answers reach every block of the study's span (then all
    # outputs are read: where ids fall depends on the sequences' state, i.e. on the tests run before).
    ids = assignments.values_list("pk", flat=True)
    span = list(range(min(ids) // BLOCK, max(ids) // BLOCK + 1))
    assert reads["blocks"][-1] == holding and reads["outputs"][4:] == ["new", "all" if holding == span else "of blocks"]
    _same(got["preference"], pairwise_sums(study, KEYS)["preference"])

    # An item's outputs changed in place: all outputs are read, the blocks holding its answers again.
    for changed in (fresh, item):
        first_output = Output.objects.filter(item=changed).order_by("position").first()
        Output.objects.filter(pk=first_output.pk).update(system=f"sys-renamed-{changed.pk}")
        got = pairwise_sums_incremental(study, KEYS)
        holding = sorted({pk // BLOCK for pk in assignments.filter(item=changed).values_list("pk", flat=True)})
        assert reads["blocks"][-1] == holding and reads["outputs"][-1] == "all"
        _same(got["preference"], pairwise_sums(study, KEYS)["preference"])
    assert len(reads["blocks"][-2]) == 1
