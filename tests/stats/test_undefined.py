"""Statistics that are undefined for the data are None with a reason, never a number."""

import numpy as np

from annotation.stats.agreement import cohen_kappa, icc, krippendorff_all, matrix_agreement, pearson
from annotation.stats.correlation import judge_vs_humans, lin_ccc


def test_one_rater_everything_undefined():
    x = np.array([[1.0], [2.0], [3.0]])
    report = matrix_agreement(x)
    for level, stat in report["krippendorff_alpha"].items():
        assert stat.value is None and stat.reason
    assert all(s.value is None and s.reason for s in report["icc"].values())
    assert report["fleiss_kappa"].value is None
    assert report["cohen_kappa"]["linear"].value is None
    assert report["mean_pairwise_pearson"].value is None
    assert report["percent_agreement"].value is None


def test_constant_scores_undefined():
    x = np.full((10, 3), 4.0)
    report = matrix_agreement(x)
    assert report["krippendorff_alpha"]["interval"].value is None
    assert "variation" in report["krippendorff_alpha"]["interval"].reason
    assert report["icc"]["ICC2"].value is None
    assert report["fleiss_kappa"].value is None
    assert report["cohen_kappa"]["unweighted"].value is None
    assert report["mean_pairwise_pearson"].value is None
    assert report["percent_agreement"].value == 1.0  # agreement itself is well defined


def test_icc_needs_complete_cases():
    x = np.array([[1, np.nan], [np.nan, 2], [3, np.nan]], dtype=float)
    stat = icc(x)["ICC1"]
    assert stat.value is None and "complete" in stat.reason


def test_pearson_constant_and_short():
    assert pearson([1, 1, 1, 1], [1, 2, 3, 4]).value is None
    assert pearson([1, 2], [2, 1]).value is None
    assert cohen_kappa([3, 3, 3], [3, 3, 3]).value is None
    assert lin_ccc([2, 2, 2], [2, 2, 2]).value is None


def test_ratio_with_negative_values_undefined():
    x = np.array([[-1, 0], [1, 2], [2, 2]], dtype=float)
    alpha = krippendorff_all(x)
    assert alpha["ratio"].value is None and alpha["interval"].value is not None


def test_judge_with_no_overlap():
    out = judge_vs_humans(np.array([np.nan, 2.0]), np.array([3.0, np.nan]))
    assert all(s.value is None for s in out.values())
