"""Numbers a request carries go through one parser (config/parsers.py): ASCII digits only, finite only,
and a refusal that names the parameter in words (issue 55: `estimate/?judge=abc` answered 500,
`delta=inf` was accepted, Arabic-Indic digits passed as ranks, raters read `invalid literal for int()`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.services.ratings import AnswerError, answers_check, answers_normalise
from config.parsers import BadNumber, parse_int, parse_number, whole_number

NOT_NUMBERS = ["inf", "-inf", "nan", "NaN", "1e999", "٣", "３", "²", "1_000", "0x10", "", " ", "abc", "1,5", "++1"]


@pytest.mark.parametrize("raw", NOT_NUMBERS)
def test_what_python_would_read_as_a_number_but_a_request_may_not_carry(raw):
    with pytest.raises(BadNumber) as exc:
        parse_number(raw, "delta")
    assert str(exc.value).startswith("delta: give a") and "float" not in str(exc.value)
    with pytest.raises(BadNumber):
        parse_int(raw, "judge")
    assert whole_number(raw) is None


def test_numbers_written_plainly_are_read():
    assert [parse_number(r, "x") for r in ("0.5", " -2 ", "1e-3", ".25", "3.")] == [0.5, -2.0, 0.001, 0.25, 3.0]
    assert [parse_int(r, "x") for r in ("7", "+7", "-7", " 12 ")] == [7, 7, -7, 12]
    assert parse_number(2, "x") == 2.0 and whole_number(5) == 5 and whole_number(True) is None
    with pytest.raises(BadNumber, match=r"^delta: give a number above 0, not '0'$"):
        parse_number("0", "delta", positive=True)
    with pytest.raises(BadNumber, match=r"^icc_threshold: give a number from 0 to 1, not 1\.5$"):
        parse_number("1.5", "icc_threshold", minimum=0, maximum=1)
    with pytest.raises(BadNumber):
        parse_int("9" * 19, "judge")  # no 5,000-digit int() on a request's say-so


# ------------------------------------------------------------------------------- what raters read

RUBRIC = {
    "criteria": [
        {"key": "order", "name": "Ranking", "kind": "ranking", "target": "item", "required": True,
         "reasoning": "none"},
        {"key": "clarity", "name": "Clarity", "kind": "likert", "min": 1, "max": 5, "target": "output",
         "required": False, "reasoning": "none"},
    ],
    "item_options": {"allow_ignore": False, "comment": False},
}


def errors_for(answers: dict) -> dict[str, str]:
    with pytest.raises(AnswerError) as exc:
        answers_check(RUBRIC, answers_normalise(answers), ["first", "second"], shown_ids=[11, 12])
    return exc.value.errors


@pytest.mark.parametrize("digits", [("١", "٢"), ("１", "２"), ("¹", "²")])
def test_ranks_in_other_digits_are_refused_in_the_raters_words(digits):
    one, two = digits
    ranked = errors_for({"item": {"order": {"value": {"ranks": {"1": two, "2": one}}}}})
    assert ranked == {"item__order": "Ranking: Response 1: give a whole-number rank from 1 to 2"}
    numbered = errors_for({"item": {"order": {"value": {"ranks": {one: 2, two: 1}}}}})
    assert numbered == {"item__order": "Ranking: a ranked response must be one of the responses shown, 1 to 2"}
    responses = errors_for({"item": {"order": {"value": {"ranks": {"1": 2, "2": 1}}}},
                            "responses": {two: {"clarity": 3}}})
    assert list(responses) == ["answers"] and "unknown response number" in responses["answers"]
    scale = errors_for({"item": {"order": {"value": {"ranks": {"1": 2, "2": 1}}}},
                        "responses": {"1": {"clarity": "٣"}}})
    assert scale == {"r1__clarity": "Response 1: Clarity: choose a whole number from 1 to 5"}
    for text in (ranked, numbered, responses, scale):
        assert "invalid literal" not in str(text) and "base 10" not in str(text)


COMPARATIVE = {
    "criteria": [
        {"key": "order", "name": "Ranking", "kind": "ranking", "target": "item", "required": True, "reasoning": "none"},
        {"key": "bw", "name": "Best and worst", "kind": "best_worst", "target": "item", "required": True,
         "reasoning": "none"},
        {"key": "pref", "name": "Better", "kind": "pairwise", "target": "item", "required": True, "reasoning": "none",
         "ties": True},
    ],
    "item_options": {"allow_ignore": False, "comment": False},
}
digits = st.text(alphabet="0123456789٠١٢٣３²¹½ⅷ-+ .e_", max_size=4)
answer_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**30) | st.floats() | digits,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["ranks", "best", "worst", "winner", "strength"]) | digits, inner, max_size=3),
    max_leaves=6)
PYTHON_WORDS = ("invalid literal", "base 10", "NoneType", "<class", "not supported between", "Traceback", "int()",
                "object has no attribute", "unhashable")


@settings(max_examples=250, deadline=None)
@given(key=st.sampled_from(["order", "bw", "pref"]), value=answer_values)
def test_comparative_answers_are_refused_in_the_raters_words(key, value):
    good = {"order": {"ranks": {"1": 1, "2": 2}}, "bw": {"best": "1", "worst": "2"}, "pref": "1"}
    item = {k: {"value": value if k == key else v} for k, v in good.items()}
    try:
        answers_check(COMPARATIVE, answers_normalise({"item": item}), ["first", "second"], shown_ids=[11, 12])
    except AnswerError as exc:
        assert not [m for m in exc.errors.values() if any(w in m for w in PYTHON_WORDS)], exc.errors


def test_ascii_ranks_are_stored():
    rows = answers_check(RUBRIC, answers_normalise({"item": {"order": {"value": {"ranks": {"1": "2", "2": 1}}}},
                                                    "responses": {"2": {"clarity": " 4 "}}}),
                         ["first", "second"], shown_ids=[11, 12])
    assert {(r.criterion, str(r.value)) for r in rows} == {("order", str({"shown": [11, 12], "ranks": [2, 1]})),
                                                           ("clarity", "4")}


# ----------------------------------------------------------------------------------- over HTTP

def test_the_estimate_names_a_judge_that_is_not_an_id(make_study, admin_user, client_for):
    study = make_study("aqua-003")
    client = client_for(admin_user)
    for raw in ("abc", "٣", "-1", "1e3"):
        answer = client.get(f"/judges/studies/{study.slug}/estimate/", {"judge": raw})
        assert answer.status_code == 400, (raw, answer.status_code)
        assert answer.content.decode().startswith("judge: give a"), answer.content
    assert client.get(f"/judges/studies/{study.slug}/estimate/", {"judge": "999999"}).status_code == 404


def test_an_export_refuses_a_delta_that_is_not_a_finite_positive_number(make_study, researcher, client_for):
    study = make_study("aqua-003", researchers=[researcher])
    client = client_for(researcher)
    for raw in ("inf", "nan", "1e999", "٣", "-1", "0"):
        answer = client.get(f"/studies/{study.slug}/datasets/export/jsonl/", {"delta": raw})
        assert answer.status_code == 400, (raw, answer.status_code)
        assert answer.content.decode().startswith("delta: give a"), answer.content
    assert client.get(f"/studies/{study.slug}/datasets/export/jsonl/", {"delta": "0.5"}).status_code == 200


def test_forms_read_numbers_in_ascii_only():
    """Django's FloatField and IntegerField read '٣' as 3; the forms' number fields refuse it."""
    from annotation.datasets.views import ReleaseForm
    from annotation.planning.forms import PlanForm
    from config.parsers import NumberField, WholeNumberField

    plan = PlanForm({"delta": "٣", "raters": "３"}, criteria=[("q", "Quality")])
    assert not plan.is_valid() and {"delta", "raters"} <= set(plan.errors)
    assert PlanForm({"delta": "0.5", "raters": "3"}, criteria=[("q", "Quality")]).is_valid()
    release = ReleaseForm({"version": "1.0.0", "formats": ["jsonl"], "delta": "١"})
    assert not release.is_valid() and "delta" in release.errors
    assert NumberField().clean(" 2.5 ") == 2.5 and WholeNumberField().clean("5.0") == 5
    from config.parsers import ApiNumberField, ApiWholeNumberField

    assert ApiNumberField().run_validation("0.5") == 0.5 and ApiWholeNumberField().run_validation("12") == 12
    for field, bad in ((ApiNumberField(), "٣"), (ApiNumberField(), "inf"), (ApiWholeNumberField(), "３")):
        with pytest.raises(Exception, match="valid"):
            field.run_validation(bad)
    for bad in ("inf", "1_0", "²"):
        with pytest.raises(Exception, match="Enter a"):
            NumberField().clean(bad)
