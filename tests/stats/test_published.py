"""Statistics against values published in the papers that define them."""

import numpy as np
import pytest

from annotation.stats.agreement import fleiss_kappa, icc, krippendorff_all

# Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8],
                          [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float)

# Krippendorff (2011) "Computing Krippendorff's alpha-reliability", 4 observers x 12 units
# with missing data (rows = units here).
nan = np.nan
KRIPPENDORFF_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]).T

# Fleiss (1971) textbook example: 10 subjects x 5 categories, 14 raters each; kappa = 0.210.
FLEISS_1971 = np.array([
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
])


@pytest.mark.parametrize("form, published", [
    ("ICC1", 0.17), ("ICC2", 0.29), ("ICC3", 0.71), ("ICC1k", 0.44), ("ICC2k", 0.62), ("ICC3k", 0.91),
])
def test_icc_shrout_fleiss_table_2(form, published):
    assert icc(SHROUT_FLEISS)[form].value == pytest.approx(published, abs=0.005)


@pytest.mark.parametrize("level, published", [
    ("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797),
])
def test_krippendorff_2011_with_missing_data(level, published):
    assert krippendorff_all(KRIPPENDORFF_2011)[level].value == pytest.approx(published, abs=0.0005)


def test_fleiss_1971():
    assert fleiss_kappa(FLEISS_1971).value == pytest.approx(0.210, abs=0.0005)
