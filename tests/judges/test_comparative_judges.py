"""Ranking and best-worst judges: blind prompts, honest parsing, the swap, the balanced design."""
from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from scipy.stats import kendalltau

from annotation.simulation.items import items_for
from judges.methods import MethodSettings, best_worst, ranking
from judges.methods.best_worst import design
from judges.methods.ranking import kendall_distance, shown_order
from judges.parsing import parse_best_worst, parse_ranking
from judges.prompts import build_best_worst, build_ranking
from tests.judges.scripted import ScriptedBackend

REPO = Path(__file__).resolve().parents[2]
RUBRIC = yaml.safe_load((REPO / "rubrics" / "presets" / "compare-ranking.yaml").read_text())
ITEMS = items_for("compare-ranking", n=4, seed=3)  # six summaries each, with their systems' names


def run(coro):
    return asyncio.run(coro)


# ------------------------------------------------------------------ prompts

@pytest.mark.parametrize("build,key", [(build_ranking, "order"), (build_ranking, None),
                                       (build_best_worst, "best_worst"), (build_best_worst, None)])
def test_prompts_show_numbered_responses_in_the_given_order_and_never_a_system_name(build, key):
    item = ITEMS[0]
    shown = [4, 1, 5, 0]
    text = build(RUBRIC, item, shown, key).text
    for output in item["outputs"]:
        assert output["system"] not in text
    starts = [text.index(f"## Response {n}\n{item['outputs'][i]['content']}") for n, i in enumerate(shown, 1)]
    assert starts == sorted(starts)
    assert "## Response 5" not in text
    assert ("Overall quality" in text) == (key is None)


def test_the_ranking_prompt_offers_ties_only_where_the_criterion_allows_them():
    assert "Ties are not allowed" in build_ranking(RUBRIC, ITEMS[0], [0, 1, 2], "order").text
    tied = {**RUBRIC, "criteria": [{**c, "ties": True} if c["key"] == "order" else c for c in RUBRIC["criteria"]]}
    text = build_ranking(tied, ITEMS[0], [0, 1, 2], "order").text
    assert '"[[2 = 1 > 3]]"' in text and "Ties are not allowed" not in text


def test_a_shown_list_that_is_not_distinct_outputs_is_refused():
    with pytest.raises(ValueError, match="not distinct outputs"):
        build_best_worst(RUBRIC, ITEMS[0], [0, 0, 1], None)
    with pytest.raises(ValueError, match="not distinct outputs"):
        build_ranking(RUBRIC, ITEMS[0], [0, 9], None)


# ------------------------------------------------------------------ parsing

@pytest.mark.parametrize("text,value,why", [
    ("Response 2 is the most faithful.\n[[2 > 1 > 3]]", [2, 1, 3], None),
    ("[[Response 3 > Response 1 > Response 2]]", [2, 3, 1], None),
    ("[[2 > 1 > 4]]", None, "names Response 4, which was not shown"),
    ("[[2 > 2 > 1]]", None, "names Response 2 twice"),
    ("[[2 > 1]]", None, "leaves out Response 3"),
    ("[[2 = 1 > 3]]", None, "a tie ('='), which this criterion does not allow"),
    ("Response 2 is clearly the best, then 1, then 3.", None, "no [[...]] ranking"),
    ("First thought: [[1 > 2 > 3]]. On reflection:\n[[3 > 2 > 1]]", [3, 2, 1], None),
    ("Whatever the format says, [[1 > 2 > 3]] then [[x > y > z]]", None, "template echoed"),
    ("[[2 > 1 > three]]", None, "not a response number"),
    ("I would not say [[1 > 2 > 3]]", None, "negated answer"),
    ("[[1 < 2 < 3]]", None, "'<' in the ranking"),
    ("<think>[[1 > 2 > 3]]</think> nothing after", None, "no [[...]] ranking"),
])
def test_parse_ranking(text, value, why):
    got = parse_ranking(text, 3)
    assert got.value == value
    assert (got.status == "ok") == (value is not None)
    if why:
        assert got.status == "unparsed" and why in got.detail


def test_a_tie_counts_where_the_criterion_allows_it():
    assert parse_ranking("[[2 = 1 > 3]]", 3, allow_ties=True).value == [1, 1, 3]
    assert parse_ranking("[[3 > 1 = 2]]", 3, allow_ties=True).value == [2, 2, 1]


@pytest.mark.parametrize("text,value,why", [
    ("Summary 3 covers everything.\n[[best: 3, worst: 1]]", {"best": 3, "worst": 1}, None),
    ("[[worst: Response 4, best: Response 2]]", {"best": 2, "worst": 4}, None),
    ("[[best: 5, worst: 1]]", None, "best: names Response 5, which was not shown"),
    ("[[best: 2, worst: 0]]", None, "worst: names Response 0, which was not shown"),
    ("[[best: 2, worst: 2]]", None, "Response 2 is both the best and the worst"),
    ("[[best: 2]]", None, "needs both best and worst"),
    ("[[best: 1, best: 2, worst: 3]]", None, "gives best twice"),
    ("The best is 3 and the worst is 1.", None, "no [[best: n, worst: m]] verdict"),
    ("[[best: 1, worst: 2]] ... no, final answer: [[best: 4, worst: 3]]", {"best": 4, "worst": 3}, None),
    ('Format: "[[best: 3, worst: 1]]". My verdict: [[best: n, worst: m]]', None, "template echoed"),
])
def test_parse_best_worst(text, value, why):
    got = parse_best_worst(text, 4)
    assert got.value == value
    if why:
        assert got.status == "unparsed" and why in got.detail


# ------------------------------------------------------------------ ranking method

def quality(content: str) -> float:
    """A judge's taste: longer summaries are better (any fixed order of the contents would do)."""
    return len(content)


def shown_contents(prompt: str) -> list[str]:
    return re.findall(r"^## Response \d+\n(.*?)(?=\n\n## Response |\n*$)", prompt.split("## Input", 1)[1], re.S | re.M)


def by_taste(prompt: str) -> str:
    contents = shown_contents(prompt)
    best_first = sorted(range(1, len(contents) + 1), key=lambda n: -quality(contents[n - 1]))
    if "[[best:" in prompt:
        return f"[[best: {best_first[0]}, worst: {best_first[-1]}]]"
    return "[[" + " > ".join(map(str, best_first)) + "]]"


def test_a_consistent_judge_ranks_the_outputs_the_same_in_both_orders():
    b = ScriptedBackend(by_taste)
    out = run(ranking(b, RUBRIC, ITEMS, MethodSettings(), key="order"))
    assert len(b.prompts) == 2 * len(ITEMS) and len(out) == len(ITEMS)
    for item, r in zip(ITEMS, out):
        assert r.criterion == "rank:order" and r.output is None and r.status == "ok"
        assert r.value["shown"] == shown_order(item["id"], 6, "order") == r.detail["orders"][0]
        assert r.detail["orders"][1] == r.value["shown"][::-1]
        lengths = {i: len(item["outputs"][i]["content"]) for i in range(6)}
        expected = sorted(range(6), key=lambda i: -lengths[i])
        ranks = dict(zip(r.value["shown"], r.value["ranks"]))
        assert sorted(range(6), key=lambda i: ranks[i]) == expected
        assert r.doubt == {"swap_distance": 0.0, "swap_disagreement": False}


def test_a_judge_that_keeps_the_shown_order_is_caught_by_the_swap():
    b = ScriptedBackend(lambda p: "[[" + " > ".join(str(n) for n in range(1, len(shown_contents(p)) + 1)) + "]]")
    out = run(ranking(b, RUBRIC, ITEMS[:2], MethodSettings()))
    for r in out:
        assert r.criterion == "rank:overall" and r.status == "ok"
        assert r.value["ranks"] == [1, 2, 3, 4, 5, 6]  # the first order's parse is kept...
        assert r.doubt == {"swap_distance": 1.0, "swap_disagreement": True}  # ...and the reversal recorded


def test_one_unparsed_order_keeps_the_other_and_both_unparsed_is_no_ranking():
    answers = iter(["[[1 > 2 > 3 > 4 > 5 > 6]]", "I cannot decide."] * 2)
    out = run(ranking(ScriptedBackend(lambda p: next(answers)), RUBRIC, ITEMS[:2], MethodSettings()))
    assert all(r.status == "ok" and r.doubt == {"swap_unparsed": True} for r in out)
    assert out[0].detail["rankings"][1] is None and "no [[...]] ranking" in out[0].detail["parse"][1]
    out = run(ranking(ScriptedBackend(lambda p: "Both are fine."), RUBRIC, ITEMS[:1], MethodSettings()))
    assert out[0].status == "unparsed" and out[0].value is None and len(out[0].raw) == 2


def test_without_swap_each_item_is_asked_once():
    b = ScriptedBackend(by_taste)
    out = run(ranking(b, RUBRIC, ITEMS, MethodSettings(), key="order", swap=False))
    assert len(b.prompts) == len(ITEMS) and all(r.doubt == {} and r.status == "ok" for r in out)


def test_kendall_distance_matches_scipy_tau_without_ties():
    rng = random.Random(5)
    for _ in range(50):
        k = rng.randint(2, 7)
        a, b = list(range(1, k + 1)), list(range(1, k + 1))
        rng.shuffle(a)
        rng.shuffle(b)
        tau = kendalltau(a, b).statistic
        assert kendall_distance(dict(enumerate(a)), dict(enumerate(b))) == pytest.approx((1 - tau) / 2)
    assert kendall_distance({0: 1, 1: 1}, {0: 1, 1: 2}) == 0.5  # a tie against an order: half


# ------------------------------------------------------------------ best-worst design and method

@pytest.mark.parametrize("n,size", [(n, s) for n in range(2, 10) for s in range(2, 6)])
def test_the_best_worst_design_shows_every_output_equally_often(n, size):
    tuples = design("cr-007", n, size, "best_worst")
    counts = Counter(i for t in tuples for i in t)
    assert set(counts) == set(range(n)) and len(set(counts.values())) == 1
    assert all(len(t) == min(n, size) and len(set(t)) == len(t) for t in tuples)
    assert len({frozenset(t) for t in tuples}) == len(tuples)  # no tuple asked twice
    assert design("cr-007", n, size, "best_worst") == tuples  # fixed: a resumed run asks the same


def test_an_item_with_no_more_outputs_than_the_tuple_is_shown_whole_once():
    assert [sorted(t) for t in design("cr-002", 4, 4, "best_worst")] == [[0, 1, 2, 3]]
    assert [sorted(t) for t in design("cr-002", 3, 4, "best_worst")] == [[0, 1, 2]]
    assert design("cr-002", 1, 4, "best_worst") == []


def test_best_worst_stores_output_indexes_in_the_order_shown():
    item = ITEMS[1]
    tuples = [(item, t) for t in design(item["id"], 6, 4, "best_worst")]
    b = ScriptedBackend(by_taste)
    out = run(best_worst(b, RUBRIC, tuples, MethodSettings(), key="best_worst"))
    assert len(out) == 3 and len(b.prompts) == 3
    for (_, shown), r in zip(tuples, out):
        assert r.criterion == "bw:best_worst:" + "-".join(map(str, shown)) and r.output is None
        lengths = {i: len(item["outputs"][i]["content"]) for i in shown}
        assert r.value == {"shown": list(shown), "best": max(shown, key=lengths.get),
                           "worst": min(shown, key=lengths.get)}


def test_best_worst_naming_one_response_twice_is_unparsed_not_guessed():
    item = ITEMS[0]
    out = run(best_worst(ScriptedBackend(lambda p: "Both best and worst: [[best: 2, worst: 2]]"), RUBRIC,
                         [(item, [0, 1, 2, 3])], MethodSettings()))
    assert out[0].status == "unparsed" and out[0].value is None
    assert out[0].detail["parse"] == "Response 2 is both the best and the worst"
