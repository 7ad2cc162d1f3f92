"""The agreement plot keeps its threshold label just above the axes however few rows it has: with one
criterion and α alone (the demo's aqua-003) the label sat 0.7 rows above the first, which at that height
was far outside the axes: matplotlib refused the layout and the saved figure was 517 pt tall, nearly all
blank, with the label alone at the top."""

from __future__ import annotations

import re
import warnings

import pytest

from annotation.reports.plots import agreement_intervals


def _report(criteria: int) -> dict:
    alpha = {"value": 0.5, "bootstrap_ci": [0.3, 0.7]}
    agreement = {f"c{i}": {"alpha_level": "nominal", "alpha": alpha, "icc1": {"value": None}} for i in range(criteria)}
    return {"agreement": agreement, "settings": {"icc_threshold": 0.6},
            "criteria": [{"key": f"c{i}", "name": f"Criterion {i}"} for i in range(criteria)]}


@pytest.mark.parametrize("criteria", [1, 2, 6])
def test_the_layout_is_applied_for_any_number_of_rows(criteria):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Tight layout not applied" is a UserWarning
        svg = agreement_intervals(_report(criteria))
    assert svg.startswith("<svg") and 'aria-label="Agreement with confidence intervals"' in svg
    height_pt = float(re.search(r'height="([0-9.]+)pt"', svg).group(1))
    assert height_pt < 72 * (1.2 + 0.32 * criteria)  # no more than the figure's own size: nothing far outside
