"""Helpers for the manage tests: an rrgen study with raters, one of them holding an item."""

from __future__ import annotations

import pytest

from tests.workspace.conftest import items_jsonl, rrgen_answers  # noqa: F401  (shared helpers)


@pytest.fixture
def study(make_study, annotator, researcher):
    return make_study("rrgen-001", annotators=[annotator], researchers=[researcher], items_text=items_jsonl(6))


def rate_one(study, rater):
    """The rater takes an item and submits a complete answer; returns the assignment."""
    from annotation.services.assignments import assignment_next
    from annotation.services.ratings import assignment_submit

    a = assignment_next(study=study, rater=rater)
    a.study = study
    return assignment_submit(assignment=a, answers=rrgen_answers(len(a.permutation)))
