"""annotation.stats.gold: which gold answer applies to a rating, and whether the rating gives it."""

from __future__ import annotations

import pytest

from annotation.stats.gold import agrees, answer_text, gold_for, parse_gold


@pytest.mark.parametrize("gold,position,expected", [
    (["ACCEPT", "ACCEPT", "REJECT"], 2, "REJECT"),  # per output
    (["ACCEPT", "ACCEPT", "REJECT"], None, None),   # per output, asked of the whole item: no answer applies
    (["ACCEPT"], 1, None),                          # the list names no answer for this output
    ({"1": "REJECT"}, 1, "REJECT"),                 # some outputs only (attention items)
    ({"1": "REJECT"}, 0, None),
    ("ACCEPT", 2, "ACCEPT"),                        # one answer for every output
    ("ACCEPT", None, "ACCEPT"),                     # ... or for the item
    (5, 0, "5"), (True, 0, "true"),                 # as PostgreSQL writes JSON scalars as text
    ([["sys-a", "sys-b"]], 0, None),                # a comparative order of systems is not one answer
    ("", 0, None), (None, 0, None),
])
def test_the_gold_that_applies(gold, position, expected):
    assert gold_for(gold, position) == expected


def test_gold_read_back_from_the_database_text():
    assert parse_gold('["ACCEPT", "REJECT"]') == ["ACCEPT", "REJECT"]
    assert parse_gold('{"0": "A"}') == {"0": "A"}
    assert parse_gold("ACCEPT") == "ACCEPT" and parse_gold(None) is None
    assert gold_for(parse_gold('["ACCEPT", "REJECT"]'), 1) == "REJECT"


def test_agreement_as_text_or_as_numbers():
    assert agrees("ACCEPT", "ACCEPT") and not agrees("ACCEPT", "REJECT")
    assert agrees("true", True) and not agrees("true", False)
    assert agrees("3", 3.0, numeric=True) and not agrees("3", 4, numeric=True)
    assert not agrees("3", "3.0") and agrees("3", "3.0", numeric=True)  # a label is its text; a score its number
    assert not agrees("3", None, numeric=True) and not agrees("good", 3, numeric=True)
    assert answer_text(2.5) == "2.5" and answer_text(None) is None
