"""A judge against the human majority label (nominal codes)."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.stats.majority import judge_vs_majority, majority_labels

nan = np.nan


def test_majority_leaves_out_ties_and_unrated_items():
    m = np.array([[1, 1, 2], [2, 1, nan], [nan, nan, nan], [3, nan, nan], [0, 0, 0]], dtype=float)
    got = majority_labels(m)
    assert got[0] == 1 and np.isnan(got[1]) and np.isnan(got[2]) and got[3] == 3 and got[4] == 0


def test_judge_against_majority_matches_sklearn():
    humans = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 1], [0, 0, 0], [2, 2, 1], [1, 0, nan], [2, 2, 2]], dtype=float)
    judge = np.array([1, 1, 1, 0, 2, 0, 1], dtype=float)
    got = judge_vs_majority(judge, humans)
    majority = [1, 0, 1, 0, 2, 2]  # item 5 ties and is left out
    judged = [1, 1, 1, 0, 2, 1]
    assert got["majority_agreement"].value == pytest.approx(4 / 6)
    assert got["majority_kappa"].value == pytest.approx(cohen_kappa_score(judged, majority))


def test_no_overlap_is_undefined_not_zero():
    got = judge_vs_majority(np.array([nan, 1.0]), np.array([[1, 1], [1, 2]], dtype=float))
    assert got["majority_agreement"].value is None and "clear human majority" in got["majority_agreement"].reason
