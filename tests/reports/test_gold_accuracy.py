"""Gold accuracy of the raters with planted truth, through the report's route (page and JSON):
gold per output (a list, or some positions only), gold for every output (a scalar), and gold that
cannot be compared with anything a rater rated ("—" with the reason, never 0). The judges' gold page
reads the items' gold with the same function (annotation.stats.gold)."""

from __future__ import annotations

import json
import random
import re

import pytest
from django.urls import reverse

from annotation.reports.study import GOLD_NOT_COMPARABLE
from judges.services.gold import gold_from_items
from tests.conftest import make_user
from tests.reports.factories import items_jsonl, submit

pytestmark = pytest.mark.django_db

N = 8
DECISIONS = ("ACCEPT", "REJECT")
# item -> gold: per output on items 0-4, position 0 only on item 5, every output's fluency on item 6,
# and on item 7 a list that names no output at all
GOLD = {**{k: {"decision": [DECISIONS[(k + p) % 2] for p in range(3)]} for k in range(5)},
        5: {"decision": ["REJECT"]}, 6: {"fluency": 5}, 7: {"decision": []}}
# the chance each rater answers a decision right (planted), rater "blind" rates item 7 only
SKILL = {"careful": 1.0, "sloppy": 0.6, "contrary": 0.0}


def _rate(study, rater, items, right: float, rng: random.Random, tally: dict) -> None:
    """Rate every output of `items`; tally[rater] = [right, compared], counted here from the planted gold."""
    for item in items:
        k = int(item.external_id.split("-")[1])
        gold = GOLD.get(k, {})
        values = {}
        for p in range(3):
            want = gold.get("decision", [None] * 3)[p] if p < len(gold.get("decision", [])) else None
            ok = rng.random() < right
            decision = (want if ok else DECISIONS[1 - DECISIONS.index(want)]) if want else rng.choice(DECISIONS)
            fluency = 5 if (ok or "fluency" not in gold) else 3
            values[(p, "decision")], values[(p, "fluency")] = decision, fluency
            if want:
                tally[rater.username][0] += decision == want
                tally[rater.username][1] += 1
            if "fluency" in gold:
                tally[rater.username][0] += fluency == gold["fluency"]
                tally[rater.username][1] += 1
        submit(study, rater, item, values)


@pytest.fixture
def gold_study(make_study, researcher):
    raters = [make_user(name) for name in (*SKILL, "blind")]
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher],
                       items_text=items_jsonl(N, gold=GOLD))
    items = list(study.items.order_by("external_id"))
    rng, tally = random.Random(7), {u.username: [0, 0] for u in raters}
    for rater in raters[:3]:
        _rate(study, rater, items, SKILL[rater.username], rng, tally)
    _rate(study, raters[3], [items[7]], 1.0, rng, tally)
    return study, tally


def test_gold_accuracy_per_output_in_the_page_and_the_json(gold_study, researcher, client_for):
    study, tally = gold_study
    client = client_for(researcher)
    url = reverse("report", args=[study.slug])
    data = json.loads(client.get(url, {"download": "json"}).content)
    raters = data["raters"]
    for name in SKILL:
        right, compared = tally[name]
        assert compared == 5 * 3 + 1 + 3  # items 0-4 per output, item 5's first output, item 6's fluency
        assert raters[name]["gold_accuracy"] == pytest.approx(right / compared)
    assert raters["careful"]["gold_accuracy"] == 1.0 and raters["contrary"]["gold_accuracy"] == 0.0
    assert 0 < raters["sloppy"]["gold_accuracy"] < 1
    # gold that names no output rated: no figure, and why
    assert raters["blind"]["gold_accuracy"] is None
    assert raters["blind"]["reasons"]["gold_accuracy"] == GOLD_NOT_COMPARABLE
    # "what to do next" names the rater below the bar and not the one who is always right
    gold_reasons = {r["rater"]: [w for w in r["reasons"] if "gold" in w]
                    for r in data["summary"]["next"]["raters_to_check"]}
    assert gold_reasons["contrary"] == ["gold accuracy 0.00"]
    assert not gold_reasons.get("careful") and not gold_reasons.get("blind")

    page = client.get(url).content.decode()
    table = page[page.index('id="raters"'):]
    table = table[table.index("<tbody>"):table.index("</tbody>")]
    rows = {}
    for row in table.split("<tr>")[1:]:
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = cells[5].split(" (")[0]  # the Gold accuracy column, without its reason
    assert rows["careful"] == "1.000" and rows["contrary"] == "0.000" and rows["blind"] == "—"
    assert rows["sloppy"] == f"{raters['sloppy']['gold_accuracy']:.3f}"
    assert GOLD_NOT_COMPARABLE.split(" (")[0] in page


def test_the_judges_gold_page_reads_the_same_gold_per_output(gold_study):
    study, _ = gold_study
    gold = gold_from_items(study, "decision")
    expected = {f"it-{k:03d}#{p}": v for k, g in GOLD.items() for p, v in enumerate(g.get("decision", []))}
    assert gold == expected
