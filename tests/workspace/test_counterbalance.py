"""Seeds 001/002: response order counterbalanced across an item's raters AND random within each
counterbalancing cell, stored per rater and item, and reported as the export's shown position."""

from __future__ import annotations

import csv
import io
from collections import Counter
from itertools import permutations

import pytest

from annotation.datasets import export_chunks
from annotation.models import Assignment, Item
from annotation.services.assignments import assignment_next, counterbalanced_order
from annotation.services.ratings import assignment_submit
from tests.workspace.conftest import items_jsonl, rrgen_answers


def _balanced(orders: list[list[int]], k: int) -> bool:
    """Every output shown equally often in every position."""
    return all(len(set(Counter(o[p] for o in orders).values())) == 1 and
               set(o[p] for o in orders) == set(range(k)) for p in range(k))


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_each_cell_of_k_raters_is_exactly_balanced(k):
    for seed in range(50):
        orders = [counterbalanced_order(n_outputs=k, slot=s, item_seed=seed) for s in range(4 * k)]
        assert all(sorted(o) == list(range(k)) for o in orders)
        for cell in range(4):
            assert _balanced(orders[cell * k:(cell + 1) * k], k), (seed, cell)


def test_order_is_random_within_cells_and_stable_per_seed():
    k = 3
    first = [tuple(counterbalanced_order(n_outputs=k, slot=0, item_seed=seed)) for seed in range(300)]
    # on its own a rater's order is uniform over all k! orders (a fixed rotation would give one)
    counts = Counter(first)
    assert set(counts) == set(permutations(range(k)))
    assert min(counts.values()) > 20  # 50 expected each
    # which row of the square a slot gets is random too, not always the same one
    designs = {tuple(tuple(counterbalanced_order(n_outputs=k, slot=s, item_seed=seed)) for s in range(k))
               for seed in range(300)}
    assert len(designs) > 6
    # the same item and slot always give the same order (slots are taken at different times)
    assert all(counterbalanced_order(n_outputs=4, slot=s, item_seed=7) ==
               counterbalanced_order(n_outputs=4, slot=s, item_seed=7) for s in range(8))


def test_single_output_items():
    assert counterbalanced_order(n_outputs=1, slot=3, item_seed=1) == [0]


def _rate_everything(study, rs):
    for r in rs:
        while (a := assignment_next(study=study, rater=r)) is not None:
            assignment_submit(assignment=a, answers=rrgen_answers(3), time_on_task_ms=1)


@pytest.mark.parametrize("n_raters", [3, 6])
def test_study_defaults_balance_each_item_with_random_orders(make_study, raters, n_raters):
    rs = raters(n_raters)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(12), raters_per_item=n_raters)
    assert study.counterbalance and study.randomize_outputs  # both on by default
    _rate_everything(study, rs)
    slot0 = Counter()
    for item in Item.objects.filter(study=study):
        orders = list(Assignment.objects.filter(item=item).order_by("slot").values_list("permutation", flat=True))
        assert len(orders) == n_raters
        assert _balanced(orders, 3)
        slot0[tuple(orders[0])] += 1
    assert len(slot0) >= 3  # a fixed Williams rotation would give at most 2 orders to the first rater


def test_counterbalance_without_randomising_keeps_the_fixed_rotation(make_study, raters):
    rs = raters(3)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(4), raters_per_item=3,
                       randomize_outputs=False)
    _rate_everything(study, rs)
    for item in Item.objects.filter(study=study):
        orders = list(Assignment.objects.filter(item=item).order_by("slot").values_list("permutation", flat=True))
        assert _balanced(orders, 3)
        assert orders[0] in ([0, 1, 2], [2, 1, 0])  # the Williams square's or its mirror's first row


def test_export_shown_position_is_what_the_rater_saw(make_study, raters, api_for):
    rs = raters(3)
    study = make_study("rrgen-001", annotators=rs, items_text=items_jsonl(4), raters_per_item=3)
    seen = {}  # (rater, item) -> output contents in the order the API showed them
    for r in rs:
        api = api_for(r)
        while (body := api.post(f"/api/studies/{study.slug}/rate/next/").json())["state"] == "rate":
            a = body["assignment"]
            stored = Assignment.objects.get(token=a["token"])
            seen[(r.username, stored.item.external_id)] = [resp["content"] for resp in a["responses"]]
            answers = rrgen_answers(3)
            for n in range(1, 4):  # response n gets the value n: the export then tells where it was shown
                answers["responses"][str(n)]["semantic_relevance"] = n
            assert api.post(f"/api/studies/{study.slug}/rate/{a['token']}/submit/",
                            {"answers": answers}, format="json").status_code == 200
    contents = {(o.item.external_id, o.position): o.content
                for item in Item.objects.filter(study=study) for o in item.outputs.all()}
    rows = [row for row in csv.DictReader(io.StringIO(b"".join(export_chunks(study, "csv")).decode()))
            if row["criterion"] == "semantic_relevance"]
    assert len(rows) == 4 * 3 * 3
    for row in rows:
        shown = int(row["shown_position"])
        assert int(row["value"]) == shown  # the rater gave response n the value n
        shown_contents = seen[(row["rater"], row["item"])]
        assert shown_contents[shown - 1] == contents[(row["item"], int(row["output"]))]
    # over the item's three raters each output sat in each position once
    for item in {row["item"] for row in rows}:
        by_output = Counter((row["output"], row["shown_position"]) for row in rows if row["item"] == item)
        assert len(by_output) == 9 and set(by_output.values()) == {1}

