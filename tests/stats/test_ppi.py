"""Prediction-powered system scores, checked against ppi_py (the authors' library)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from annotation.stats.ppi import estimate_system, ppi_lambda
from tests.offline_command import run_in_process, run_offline


def _data(seed: int, n: int = 80, big_n: int = 900, bias: float = 0.7, noise: float = 0.6):
    rng = np.random.default_rng(seed)
    truth = rng.normal(3.0, 1.0, n + big_n)
    judge = truth * 0.8 + bias + rng.normal(0, noise, n + big_n)  # biased and noisy
    human = truth + rng.normal(0, 0.3, n + big_n)
    return human[:n], judge[:n], judge[n:]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppi_and_ppi_plus_match_ppi_py(seed):
    y, yhat, yu = _data(seed)
    ours = estimate_system(y, yhat, yu)
    assert ours["ppi"]["mean"] == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yu, lam=1)[0]))
    assert ours["ppi"]["ci"] == pytest.approx([float(v[0]) for v in ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=1)])
    assert ours["ppi_plus"]["mean"] == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yu)[0]))
    assert ours["ppi_plus"]["ci"] == pytest.approx([float(v[0]) for v in ppi_mean_ci(y, yhat, yu, alpha=0.05)])
    assert ours["human_only"]["ci"] == pytest.approx([float(v) for v in classical_mean_ci(y, alpha=0.05)])
    assert 0 <= ours["ppi_plus"]["lambda"] <= 1


def test_a_useless_judge_gets_no_weight_and_a_good_one_saves_human_ratings():
    rng = np.random.default_rng(5)
    y = rng.normal(3, 1, 60)
    assert ppi_lambda(y, rng.normal(0, 1, 60), rng.normal(0, 1, 500)) < 0.1  # judge unrelated to humans
    assert ppi_lambda(y, np.full(60, 2.0), np.full(500, 2.0)) == 0.0  # constant judge
    good = estimate_system(*_data(3, noise=0.1))
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(good["ppi_plus"]["ci"]) < width(good["human_only"]["ci"])
    assert good["ppi_plus"]["effective_n"] > good["human_only"]["n"]


def test_ppi_intervals_cover_the_human_mean_despite_a_biased_judge():
    """Over 300 simulated studies the 95% PPI interval covers the true human mean about 95% of the
    time, while the judge-only mean is off by its bias every time."""
    covered, covered_plus, judge_err = 0, 0, []
    for seed in range(300):
        y, yhat, yu = _data(1000 + seed, n=60, big_n=600)
        e = estimate_system(y, yhat, yu)
        covered += e["ppi"]["ci"][0] <= 3.0 <= e["ppi"]["ci"][1]
        covered_plus += e["ppi_plus"]["ci"][0] <= 3.0 <= e["ppi_plus"]["ci"][1]
        judge_err.append(e["judge_only"]["mean"] - 3.0)
    assert 0.91 <= covered / 300 <= 0.99 and 0.91 <= covered_plus / 300 <= 0.99
    assert np.mean(judge_err) == pytest.approx(0.1, abs=0.05)  # 0.8·3 + 0.7 − 3


def _command(tmp_path, text: str, *args: str):
    return run_in_process("estimate", tmp_path, text, *args)


def test_estimate_command_json_averages_raters_and_needs_no_database(tmp_path):
    y, yhat, yu = _data(7, n=30, big_n=100)
    lines = ["item,system,human,judge"]
    for i, (h, j) in enumerate(zip(y, yhat)):  # two raters per human-rated item, mean = h
        lines += [f"i{i},sysA,{h - 0.5},{j}", f"i{i},sysA,{h + 0.5},{j}"]
    lines += [f"u{i},sysA,,{j}" for i, j in enumerate(yu)]
    lines += ["i0,sysB,4,3", "i1,sysB,5,4", "i2,sysB,,5"]
    done = run_offline("estimate", tmp_path, "\n".join(lines) + "\n", "--json")  # a fresh process, no database
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out) == {"sysA", "sysB"}
    a = out["sysA"]
    assert set(a) >= {"human_only", "judge_only", "ppi", "ppi_plus"}
    assert a["human_only"]["n"] == 30 and a["judge_only"]["n"] == 130
    expected = estimate_system(y, yhat, yu)
    assert a["ppi"]["mean"] == pytest.approx(expected["ppi"]["mean"])
    assert a["ppi_plus"]["ci"] == pytest.approx(expected["ppi_plus"]["ci"])
    assert a["ppi_plus"]["lambda"] == pytest.approx(expected["ppi_plus"]["lambda"])
    assert out["sysB"]["ppi"]["mean"] == pytest.approx(5 + ((4 - 3) + (5 - 4)) / 2)
    text = _command(tmp_path, "\n".join(lines) + "\n")
    assert "system sysA: 30 items rated by humans, 130 scored by the judge" in text.stdout


@pytest.mark.parametrize("text,message", [
    ("item,system,human\ni1,a,3\n", "column 'judge': missing column"),
    ("item,system,human,judge\ni1,a,good,3\n", "row 2, column 'human': not a number: 'good'"),
    ("item,system,human,judge\ni1,a,3,4\ni1,a,2,5\n", "row 3, column 'judge': item 'i1', system 'a' has two "
                                                      "different judge scores"),
])
def test_estimate_command_names_the_bad_line_and_column(tmp_path, text, message):
    done = _command(tmp_path, text)
    assert done.returncode != 0 and message in done.stderr


def test_too_few_human_items_is_null_with_a_reason():
    e = estimate_system(np.array([3.0]), np.array([2.0]), np.array([1.0, 2.0]))
    assert e["ppi"]["mean"] is None and "at least 2 items" in e["ppi"]["reason"]
    assert e["human_only"] == {"mean": 3.0, "ci": None, "n": 1}
