"""Property: whatever a client sends as a criterion's value, the answer is either stored as a valid
value or refused with a message in the rater's words, never a Python error text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.services.ratings import AnswerError, answers_check, answers_normalise

RUBRIC = {
    "criteria": [
        {"key": "clarity", "name": "Clarity", "kind": "likert", "min": 1, "max": 5, "target": "output",
         "required": True, "reasoning": "none"},
        {"key": "score", "name": "Score", "kind": "numeric", "min": 0, "max": 10, "step": 0.5, "target": "output",
         "required": True, "reasoning": "none"},
        {"key": "label", "name": "Label", "kind": "choice", "choices": [{"value": "TP"}, {"value": "FP1"}],
         "target": "output", "required": True, "reasoning": "none"},
    ],
    "item_options": {"allow_ignore": False, "comment": False},
}
EXPECTED = {
    "r1__clarity": "Response 1: Clarity: choose a whole number from 1 to 5",
    "r1__score": "Response 1: Score: choose a number from 0 to 10 in steps of 0.5",
    "r1__label": "Response 1: Label: choose one of TP, FP1",
}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["start", "end", "x"]), inner,
                                                                max_size=2),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["clarity", "score", "label"]), value=json_values)
def test_any_value_is_stored_or_refused_in_the_raters_words(key, value):
    block = {"clarity": 3, "score": 5, "label": "TP", key: value}
    try:
        answers = answers_normalise({"responses": {"1": block}})
        rows = answers_check(RUBRIC, answers, ["the response"])
    except AnswerError as exc:
        field = f"r1__{key}"
        message = exc.errors.get(field, "")
        required = EXPECTED[field].rsplit(":", 1)[0] + " is required"  # a blank value: "", None, []
        # text PostgreSQL cannot store (NUL, a lone surrogate) is refused as such, whatever the criterion
        unstorable = message.startswith(("contains a NUL character", "contains an unpaired surrogate"))
        assert (message in (EXPECTED[field], required) or message.startswith("an answer is a value or")
                or unstorable), exc.errors
        return
    stored = {r.criterion: r.value for r in rows}
    if key == "clarity":
        assert stored["clarity"] in {1, 2, 3, 4, 5}
    elif key == "score":
        assert 0 <= stored["score"] <= 10 and (stored["score"] * 2) % 1 == 0
    else:
        assert stored["label"] in {"TP", "FP1"}
