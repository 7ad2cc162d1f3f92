"""How the engine picks a rater's next item: a walk through the study's random order (Item.pick_key)
from the rater's own starting point, resumed at their cursor, routed items first, wrapping at the
end; each step a range read of a partial index, never a sort or hash of the open items."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.db import PREPARE_AFTER
from annotation.models import Assignment, Item, StudyMember
from annotation.services.assignments import _start_key, assignment_next
from annotation.services.ratings import assignment_submit
from tests.workspace.conftest import items_jsonl, rrgen_answers

pytestmark = pytest.mark.django_db


def take(study, rater) -> Assignment:
    a = assignment_next(study=study, rater=rater)
    a.study = study
    assignment_submit(assignment=a, answers=rrgen_answers(len(a.permutation)))
    return a


def test_a_rater_walks_the_random_order_from_their_own_start(make_study, raters):
    r, other = raters(2)
    study = make_study("rrgen-001", annotators=[r, other], items_text=items_jsonl(30))
    keys = dict(Item.objects.filter(study=study).values_list("id", "pick_key"))
    start = _start_key(study, r)
    walk = [keys[take(study, r).item_id] for _ in range(12)]
    expected = sorted(k for k in keys.values() if k > start) + sorted(k for k in keys.values() if k <= start)
    assert walk == expected[:12]  # the keys after the start in order, then from the beginning
    assert StudyMember.objects.get(study=study, user=r).pick_cursor == walk[-1]
    assert _start_key(study, other) != start  # each rater starts elsewhere


def test_routed_items_come_first_and_full_items_are_passed(make_study, raters):
    r1, r2 = raters(2)
    study = make_study("rrgen-001", annotators=[r1, r2], items_text=items_jsonl(10), raters_per_item=1)
    routed = Item.objects.filter(study=study).order_by("-pick_key").first()
    Item.objects.filter(pk=routed.pk).update(priority=3)
    assert take(study, r1).item_id == routed.pk
    taken = {take(study, r1).item_id for _ in range(4)} | {routed.pk}
    seen = {take(study, r2).item_id for _ in range(5)}
    assert not seen & taken  # one rater per item: r2's walk passes the items r1 filled
    assert assignment_next(study=study, rater=r2) is None


def test_upload_order_when_items_are_not_shuffled(make_study, raters):
    (r,) = raters(1)
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(6), randomize_items=False)
    got = [Item.objects.get(pk=take(study, r).item_id).external_id for _ in range(6)]
    assert got == [f"it-{i:04d}" for i in range(6)]


@pytest.mark.parametrize("shuffled", [True, False])
def test_the_pick_reads_an_index_range_not_the_open_items(make_study, raters, shuffled,
                                                          django_capture_on_commit_callbacks):
    (r,) = raters(1)
    # Statistics from before the upload, as on a long-running server: every item is another study's.
    make_study("rrgen-001", annotators=[r], items_text=items_jsonl(3000), slug="earlier")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_item; ANALYZE annotation_assignment")
    with django_capture_on_commit_callbacks(execute=True):  # the upload refreshes them
        study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(3000), randomize_items=shuffled)
    with CaptureQueriesContext(connection) as queries:
        assignment_next(study=study, rater=r)
    pick = next(q["sql"] for q in queries if "LIMIT 1 FOR UPDATE OF i SKIP LOCKED" in q["sql"])
    lock = next(q["sql"] for q in queries if "pick_cursor" in q["sql"] and "FOR NO KEY UPDATE" in q["sql"])

    def nodes_of(sql: str) -> list[dict]:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
            plan = cursor.fetchone()[0][0]["Plan"]
        found, stack = [], [plan]
        while stack:
            node = stack.pop()
            found.append(node)
            stack.extend(node.get("Plans", []))
        return found

    items = [n for n in nodes_of(pick) if n.get("Relation Name") == "annotation_item"]
    assert [n["Node Type"] for n in items] == ["Index Scan"]  # one ordered range read, no scan of open items
    # Upload order: the study's own index, or (one study in the table) the primary key, read in id order.
    assert items[0]["Index Name"] in ({"item_pick_random_idx"} if shuffled else {"item_pick_upload_idx",
                                                                               "annotation_item_pkey"})
    assert not any(n["Node Type"] == "Sort" and "pick_key" in json.dumps(n.get("Sort Key")) for n in nodes_of(pick))
    probe = [n for n in nodes_of(lock) if n.get("Relation Name") == "annotation_item"]
    assert [n.get("Index Name") for n in probe] == ["item_pick_routed_idx"]  # routed items: their small index


def test_whether_the_rater_had_an_item_is_asked_by_the_item_in_the_cached_plan(make_study, raters):
    """The loop's statements are prepared, and PostgreSQL may keep one generic plan per connection
    for the rest of its life. Planned while the assignment table was small, the pick once joined it
    whole (a sequential scan on every pick, growing with the table): the check must stay a per-item
    index probe in the generic plan too."""
    r, *others = raters(4)
    earlier = make_study("rrgen-001", annotators=others, items_text=items_jsonl(700), slug="earlier")
    Assignment.objects.bulk_create(Assignment(study=earlier, item=item, rater=o, status="submitted", slot=k)
                                   for item in earlier.items.all() for k, o in enumerate(others))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_assignment")  # 2,100 rows, as early in a load run
    study = make_study("rrgen-001", annotators=[r], items_text=items_jsonl(60))
    for _ in range(PREPARE_AFTER + 1):  # the pick is prepared on this connection by now
        take(study, r)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, cardinality(parameter_types) FROM pg_prepared_statements"
                       " WHERE statement LIKE '%%SKIP LOCKED%%' AND statement LIKE '%%pick_key >%%'")
        (statement, n_params), = cursor.fetchall()
        cursor.execute("PREPARE pick_probe AS " + statement.replace("%", "%%"))
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.execute(f"EXPLAIN (FORMAT JSON) EXECUTE pick_probe({', '.join(['NULL'] * n_params)})")
        plan = cursor.fetchone()[0][0]["Plan"]
        cursor.execute("RESET plan_cache_mode; DEALLOCATE pick_probe")
    nodes, stack = [], [(plan, None)]
    while stack:
        node, parent = stack.pop()
        nodes.append((node, parent))
        stack.extend((child, node) for child in node.get("Plans", []))
    # the "had it?" probe (alias a); the statement also renews the rater's own lease, by their index
    reads = [n for n, _ in nodes if n.get("Relation Name") == "annotation_assignment" and n.get("Alias") == "a"]

    def probes_the_item(node: dict) -> bool:
        """A read of the assignments of one item (i.id, the outer row) through an index: an index scan, or a
        bitmap heap scan over a bitmap index scan (the generic plan's choice with some statistics)."""
        if node["Node Type"] == "Bitmap Heap Scan":
            node = node["Plans"][0]
        return (node["Node Type"] in {"Index Scan", "Index Only Scan", "Bitmap Index Scan"}
                and "i.id" in node.get("Index Cond", ""))

    assert reads and all(n.get("Parent Relationship") == "SubPlan" and probes_the_item(n) for n in reads), reads
