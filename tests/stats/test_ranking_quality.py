import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon
from statsmodels.stats.multitest import multipletests

from annotation.stats.ranking import compare_systems, holm
from annotation.stats.rater_quality import position_effects, rater_quality


def test_holm_matches_statsmodels():
    p = [0.01, 0.04, 0.03, 0.2, 0.001]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert holm([0.02, None]) == [0.02, None]


def test_compare_systems():
    rng = np.random.default_rng(0)
    rows = []
    quality = {"a": 4.0, "b": 3.0, "c": 3.1}
    for item in range(40):
        for system, q in quality.items():
            for rater in range(2):
                rows.append((item, system, "overall", float(np.clip(np.rint(q + rng.normal(0, 0.8)), 1, 5))))
            rows.append((item, system, "accept", "ACCEPT" if q > 3.5 or item % 2 else "REJECT"))
    df = pd.DataFrame(rows, columns=["item", "system", "criterion", "score"])
    out = compare_systems(df, accept_criterion="accept")
    assert out["accept_rate"] == {"a": 1.0, "b": 0.5, "c": 0.5}
    crit = out["criteria"]["overall"]
    assert crit["ranking"][0] == "a"
    num = df[df.criterion == "overall"].assign(score=lambda d: d.score.astype(float))
    per_item = num.groupby(["item", "system"]).score.mean().unstack()
    assert crit["systems"]["b"]["mean"] == pytest.approx(per_item["b"].mean())
    ab = next(p for p in crit["pairs"] if (p["a"], p["b"]) == ("a", "b"))
    assert ab["p_value"] == pytest.approx(wilcoxon(per_item["a"], per_item["b"]).pvalue)
    assert ab["win_a"] == pytest.approx(np.mean(per_item["a"] > per_item["b"]))
    raw = [p["p_value"] for p in crit["pairs"]]
    assert [p["p_holm"] for p in crit["pairs"]] == pytest.approx(list(multipletests(raw, method="holm")[1]))


def test_rater_quality_by_hand():
    rows = pd.DataFrame({
        "unit": ["u1", "u1", "u1", "u2", "u2", "u2", "u3", "u3", "u3", "u4", "u4", "u4"],
        "rater": ["a", "b", "c"] * 4,
        "score": [3, 3, 5, 2, 2, 4, 4, 4, 5, 1, 1, 3],
        "seconds": [30, 40, 2, 30, 40, 2, 30, 40, 2, 30, 40, 2],
        "position": [1, 2, 3, 2, 3, 1, 3, 1, 2, 1, 2, 3],
        "gold": [3, 3, 3, 2, 2, 2, None, None, None, None, None, None],
    })
    q = rater_quality(rows)
    # c is always above the mean of a and b: by 2, 2, 1, 2
    assert q["c"]["bias"] == pytest.approx((2 + 2 + 1 + 2) / 4)
    # a vs the mean of b and c: 3-4, 2-3, 4-4.5, 1-2
    assert q["a"]["bias"] == pytest.approx((-1 - 1 - 0.5 - 1) / 4)
    assert q["c"]["gold_accuracy"] == 0.0 and q["a"]["gold_accuracy"] == 1.0
    assert q["c"]["median_seconds"] == 2 and "fast" in q["c"]["flags"]
    assert "fast" not in q["a"]["flags"]
    assert q["a"]["position_means"] == {1: 2.0, 2: 2.0, 3: 4.0}
    eff = position_effects(rows)
    assert eff[1]["n"] == 4 and eff[1]["mean"] == pytest.approx(np.mean([3, 4, 4, 1]))
