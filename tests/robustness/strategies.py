"""Hypothesis strategies shared by the property tests: JSON-like values with the awkward parts
(NaN, infinities, huge integers, NUL, unpaired surrogates, Unicode line separators)."""

from __future__ import annotations

from hypothesis import strategies as st

# Characters that broke real importers: NUL (PostgreSQL text refuses it), an unpaired surrogate
# (not encodable as UTF-8), separators that str.splitlines() treats as line ends, CSV syntax.
AWKWARD_CHARS = ["\x00", "\ud800", "\udfff", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\r", "\n",
                 '"', ",", "\\", "\ufeff", "{", "}", "[", "]", ":", " "]

any_char = st.one_of(st.characters(exclude_categories=()), st.sampled_from(AWKWARD_CHARS))
any_text = st.text(any_char, max_size=30)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),  # NaN and the infinities included: json.loads accepts NaN/Infinity/1e999
    any_text,
)

json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4),
    max_leaves=12,
)


def csv_cells():
    """Text a spreadsheet could put in a cell, including numbers, JSON and the awkward characters."""
    return st.one_of(any_text, st.from_regex(r"-?\d{1,5}(\.\d+)?([eE][+-]?\d{1,4})?", fullmatch=True),
                     st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "true", "{}", "[]",
                                      '{"a": NaN}', '{"a": 1e999}', '{"a": "\\u0000"}', "text", "html", "diff"]))
