"""Sampling policies through rate/next over HTTP (issue 58 §2, §3): adaptive redundancy serves only the
items whose posterior is unsure, within min/max raters; active pairs record each pair's probability."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from annotation.models import Assignment, Item
from annotation.services.items import items_import
from annotation.services.studies import StudyError, study_create, study_members_add, study_set_status
from rubrics.services import rubric_version_create
from tests.conftest import make_user

LABEL_RUBRIC = {"slug": "adaptive-test", "name": "Adaptive test", "criteria": [
    {"key": "decision", "name": "Decision", "kind": "binary", "choices": [{"value": "ACCEPT"}, {"value": "REJECT"}]}]}
PAIR_RUBRIC = {"slug": "active-pairs-test", "name": "Active pairs test", "criteria": [
    {"key": "pref", "name": "Better answer", "kind": "pairwise"}]}


def _study(admin, rubric, policy, *, items, k, n_raters):
    version, _ = rubric_version_create(data=rubric)
    study = study_create(name=rubric["name"], rubric_version=version, user=admin, sampling_policy=policy)
    rows = [{"id": name, "context": f"Question {name}",
             "outputs": [{"system": f"sys-{j}", "content": f"Answer {j} to {name}"} for j in range(k)]}
            for name in items]
    items_import(study=study, text="\n".join(json.dumps(r) for r in rows), filename="items.jsonl")
    raters = [make_user(f"{rubric['slug'][:6]}-{i}") for i in range(n_raters)]
    study_members_add(study=study, usernames=[u.username for u in raters], role="annotator")
    study_set_status(study=study, status="open")
    return study, raters


def _next(client, study, rater) -> Assignment | None:
    assert client.get(f"/studies/{study.slug}/rate/").status_code == 200
    return Assignment.objects.filter(study=study, rater=rater, status="active").select_related("item").first()


@pytest.mark.django_db(transaction=True)
def test_adaptive_redundancy_serves_only_unsure_items_within_min_and_max(admin_user, client_for):
    policy = {"name": "adaptive_redundancy", "min_raters": 2, "max_raters": 4, "target": 0.9}
    study, raters = _study(admin_user, LABEL_RUBRIC, policy, items=["agreed", "split"], k=1, n_raters=6)
    assert study.raters_per_item == 4  # the max is the engine's hard cap
    answers = Counter()
    served = []
    for rater in raters:
        c = client_for(rater)
        while (a := _next(c, study, rater)) is not None:
            name = a.item.external_id
            served.append((rater.pk, name))
            # "agreed" always gets ACCEPT; "split" alternates, so its answer never becomes sure
            value = "ACCEPT" if name == "agreed" or answers[name] % 2 == 0 else "REJECT"
            answers[name] += 1
            r = c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"r1__decision": value})
            assert r.status_code == 302, r.content[:500]
    done = Counter(Assignment.objects.filter(study=study, status="submitted").values_list("item__external_id", flat=True))
    assert done == {"agreed": 2, "split": 4}  # two agreeing labels suffice; the split item runs to the max
    assert len(served) == len(set(served))  # never the same rater twice
    # The admin's pages count what the policy wants, not raters_per_item (4) an item.
    admin = client_for(admin_user)
    assert "6 of 6 ratings done" in admin.get("/").content.decode()
    page = admin.get(f"/studies/{study.slug}/items/?status=complete").content.decode()
    assert "2 / 2" in page and "4 / 4" in page
    assert "data-item" not in admin.get(f"/studies/{study.slug}/items/?status=in_progress").content.decode()
    assert Item.objects.get(study=study, external_id="agreed").slots_wanted == 2


@pytest.mark.django_db(transaction=True)
def test_bad_policy_is_refused_by_name_and_nothing_is_stored(admin_user):
    version, _ = rubric_version_create(data=LABEL_RUBRIC)
    with pytest.raises(StudyError, match="sampling_policy: .*max_raters"):
        study_create(name="Bad policy", rubric_version=version, user=admin_user,
                     sampling_policy={"name": "adaptive_redundancy", "min_raters": 3, "max_raters": 2})
    with pytest.raises(StudyError, match="pairwise"):
        study_create(name="Bad policy", rubric_version=version, user=admin_user,
                     sampling_policy={"name": "active_pairs"})
    from annotation.models import Study
    assert not Study.objects.filter(name="Bad policy").exists()


@pytest.mark.django_db(transaction=True)
def test_active_pairs_record_probability_and_balance_positions(admin_user, client_for):
    policy = {"name": "active_pairs", "random_share": 0.5}
    study, raters = _study(admin_user, PAIR_RUBRIC, policy, items=["q1", "q2", "q3"], k=4, n_raters=4)
    first, second = Counter(), Counter()
    for rater in raters:
        c = client_for(rater)
        while (a := _next(c, study, rater)) is not None:
            assert len(a.permutation) == 2
            assert a.sampling in ("random", "active")
            floor = 0.5 / 6  # 4 outputs: 6 pairs
            assert a.sampling_probability == pytest.approx(floor if a.sampling == "random" else floor + 0.5)
            systems = dict(a.item.outputs.values_list("position", "system"))
            first[systems[a.permutation[0]]] += 1
            second[systems[a.permutation[1]]] += 1
            r = c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"item__pref": "1"})
            assert r.status_code == 302, r.content[:500]
    assert Assignment.objects.filter(study=study, status="submitted").count() == 3 * 3  # raters_per_item 3
    for system in set(first) | set(second):
        assert abs(first[system] - second[system]) <= 2, (first, second)


@pytest.mark.django_db(transaction=True)
def test_exports_and_methods_carry_the_design(admin_user, client_for):
    from annotation.datasets import export_chunks
    from annotation.reports.methods import methods_paragraph

    study, raters = _study(admin_user, PAIR_RUBRIC, {"name": "active_pairs", "random_share": 0.3},
                           items=["q1"], k=3, n_raters=1)
    c = client_for(raters[0])
    a = _next(c, study, raters[0])
    assert c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"item__pref": "2"}).status_code == 302
    a.refresh_from_db()
    for fmt in ("jsonl", "csv"):
        text = b"".join(export_chunks(study, fmt)).decode()
        if fmt == "jsonl":
            row = json.loads(text.splitlines()[0])
        else:
            import csv
            import io
            row = next(csv.DictReader(io.StringIO(text)))
        assert row["sampling"] == a.sampling
        assert float(row["sampling_probability"]) == pytest.approx(a.sampling_probability)
    from annotation.datasets.card import card_text

    card = card_text(study=study, version="1.0.0", license="cc-by-4.0", n_rows=1, agreement={})
    assert "- **Sampling policy**: Pairs were chosen actively: 30% of comparisons" in card
    text = methods_paragraph(study, {"counts": {}})
    assert "30% of comparisons drew a pair uniformly at random" in text
    assert "each item was assigned to" not in text


@pytest.mark.django_db(transaction=True)
def test_leaving_adaptive_redundancy_reopens_items_to_raters_per_item(admin_user, client_for):
    from annotation.services.studies import study_settings_update

    policy = {"name": "adaptive_redundancy", "min_raters": 1, "max_raters": 3, "target": 0.6}
    study, raters = _study(admin_user, LABEL_RUBRIC, policy, items=["only"], k=1, n_raters=3)
    c = client_for(raters[0])
    a = _next(c, study, raters[0])
    c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"r1__decision": "ACCEPT"})
    item = Item.objects.get(study=study)
    assert item.slots_wanted == 1  # one sure label was enough under the policy
    assert _next(client_for(raters[1]), study, raters[1]) is None
    study_settings_update(study=study, user=admin_user, changes={"sampling_policy": {}}, confirmed=True)
    item.refresh_from_db()
    assert item.slots_wanted is None
    assert _next(client_for(raters[1]), study, raters[1]) is not None  # uniform: raters_per_item (3) again


@pytest.mark.django_db(transaction=True)
def test_study_wins_sums_the_stored_answers(admin_user, client_for):
    # The database's sums per pair of systems against a recount of the stored values in Python.
    import numpy as np

    from annotation.models import Output, Rating
    from annotation.services.sampling_policy import study_wins

    rubric = {**PAIR_RUBRIC, "slug": "wins-test", "criteria": [{**PAIR_RUBRIC["criteria"][0], "ties": True}]}
    study, raters = _study(admin_user, rubric, {"name": "active_pairs", "random_share": 0.5},
                           items=["w1", "w2"], k=3, n_raters=3)
    answers = iter(["1", "2", "tie", "1", "2", "1"])
    for rater in raters:
        c = client_for(rater)
        while (a := _next(c, study, rater)) is not None:
            c.post(f"/studies/{study.slug}/rate/{a.token}/submit/", {"item__pref": next(answers)})
    names = ["sys-0", "sys-1", "sys-2"]
    system = dict(Output.objects.filter(item__study=study).values_list("pk", "system"))
    want, shown_first = np.zeros((3, 3)), np.zeros(3)
    for v in Rating.objects.filter(assignment__study=study, criterion="pref").values_list("value", flat=True):
        a, b = (names.index(system[o]) for o in v["shown"])
        shown_first[a] += 1
        shown_first[b] -= 1
        if v["winner"] == "tie":
            want[a, b] += 0.5
            want[b, a] += 0.5
        else:
            w = names.index(system[v["winner"]])
            want[w, b if w == a else a] += 1
    wins, balance = study_wins(study, names)
    assert want.sum() == 6
    np.testing.assert_array_equal(wins, want)
    np.testing.assert_array_equal(balance, shown_first)
