"""A small RRGen study with three raters whose ratings are known in advance."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.conftest import make_user
from tests.reports.factories import items_jsonl, rate_study

N_ITEMS = 8


def rrgen_value(i: int, p: int, r: int, key: str, rng) -> object:
    """sys-a (position 0) is best; rater 2 is one point harsher; decisions follow the score."""
    base = {0: 6, 1: 4, 2: 2}[p] + (i % 3) - 1
    score = max(1, min(7, base - (1 if r == 2 else 0) + (1 if (i + r + p) % 4 == 0 else 0)))
    if key == "decision":
        return "ACCEPT" if score >= 4 else "REJECT"
    return score


@pytest.fixture
def raters(db):
    return [make_user(f"r{k}") for k in range(3)]


@pytest.fixture
def rated_study(make_study, raters, researcher):
    study = make_study("rrgen-001", annotators=raters, researchers=[researcher],
                       items_text=items_jsonl(N_ITEMS))
    rate_study(study, raters, rrgen_value, ignore={(N_ITEMS - 1, 1)})
    return study


@pytest.fixture
def other_annotator(db):
    return get_user_model().objects.create_user(username="solo-annotator", password="x")


FEEDBACK_SYSTEMS = ("fb-a", "fb-b")


def feedback_value(i: int, p: int, r: int, key: str, rng) -> object:
    """fb-a is two points better than fb-b on every criterion; the rated `overall` criterion
    is set one point apart from the criteria's mean so the two overalls can be told apart."""
    base = 4 if p == 0 else 2
    if key == "overall":
        return base + 1
    if key == "confidence":
        return 3 + (r % 2)
    return max(1, min(5, base + ((i + r) % 2)))


@pytest.fixture
def feedback_study(make_study, raters, researcher):
    """Seed 000's preset, whose rubric has a criterion keyed `overall`, rated by three raters."""
    study = make_study("feedback-000", annotators=raters, researchers=[researcher],
                       items_text=items_jsonl(4, systems=FEEDBACK_SYSTEMS, prefix="fb"))
    rate_study(study, raters, feedback_value)
    return study
