"""The comparative kinds in the rubric format: defaults, and the relations a schema cannot say."""
import pytest

from rubrics.loader import RubricError, validate_rubric


def rubric(*criteria):
    return {"slug": "cmp", "name": "Compare", "criteria": list(criteria)}


def errors(data):
    with pytest.raises(RubricError) as exc:
        validate_rubric(data)
    return exc.value.errors


def test_defaults_make_comparative_questions_item_level():
    out = validate_rubric(rubric({"key": "pref", "name": "Better?", "kind": "pairwise"},
                                 {"key": "order", "name": "Rank", "kind": "ranking"},
                                 {"key": "help", "name": "Helpful", "kind": "likert", "min": 1, "max": 5}))
    pref, order, help_ = out["criteria"]
    assert (pref["target"], pref["ties"], pref["strength"]) == ("item", True, False)
    assert (order["target"], order["ties"]) == ("item", False)
    assert help_["target"] == "output" and "ties" not in help_
    bws = validate_rubric(rubric({"key": "bws", "name": "Best and worst", "kind": "best_worst"}))
    assert bws["criteria"][0]["tuple_size"] == 4


def test_comparative_question_cannot_target_outputs():
    errs = errors(rubric({"key": "pref", "name": "Better?", "kind": "pairwise", "target": "output"}))
    assert errs == [("criteria[0].target", "must be item for a pairwise criterion (it compares the outputs shown)")]


def test_options_belong_to_their_kinds():
    errs = dict(errors(rubric({"key": "x", "name": "X", "kind": "likert", "min": 1, "max": 5, "ties": True},
                              {"key": "b", "name": "B", "kind": "best_worst", "strength": True})))
    assert errs["criteria[0].ties"] == "is allowed only for a pairwise or ranking criterion"
    assert errs["criteria[1].strength"] == "is allowed only for a pairwise criterion"


def test_pairwise_and_best_worst_do_not_mix_and_tuple_sizes_agree():
    errs = errors(rubric({"key": "p", "name": "P", "kind": "pairwise"},
                         {"key": "b", "name": "B", "kind": "best_worst"}))
    assert errs[0][0] == "criteria" and "pairwise or best_worst" in errs[0][1]
    errs = errors(rubric({"key": "b", "name": "B", "kind": "best_worst", "tuple_size": 3},
                         {"key": "c", "name": "C", "kind": "best_worst", "tuple_size": 5}))
    assert errs == [("criteria", "best_worst questions must share one tuple_size (got [3, 5])")]
    assert errors(rubric({"key": "b", "name": "B", "kind": "best_worst", "tuple_size": 2}))[0][0] == \
        "criteria[0].tuple_size"
