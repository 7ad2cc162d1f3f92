"""simulate_policy's simulations (annotation/stats/policy_sim.py), small and seeded: the goals of issue 58
§1 and §4 with margins for the smaller run (the full run's figures are in docs/active-sampling.md)."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.stats.policy_sim import simulate_active, simulate_peeking


def test_active_sampling_saves_where_the_uncertainty_predicts_the_error_and_costs_little_where_not():
    out = simulate_active(correlations=(0.0, 0.75), mechanisms=("unequal_jury",), replications=120, items=1000,
                          budget=100, oracle=False, seed=7)
    none, strong = out["rows"]
    assert none["mechanism"] == "uninformative" and strong["mechanism"] == "unequal_jury"
    assert abs(none["realised_correlation"]) < 0.05 and abs(strong["realised_correlation"] - 0.75) < 0.05
    assert none["saving"] >= -0.08  # 120 studies: the goal (-5%) with room for their noise
    assert strong["saving"] >= 0.3 and strong["saving"] > none["saving"] + 0.25
    for row in out["rows"]:
        assert row["active_coverage"] >= 0.89  # 120 studies: 95% ± 2% (one SE)
        assert abs(row["active_ratings"] - 100) < 3  # the budget is kept in expectation
        assert row["best_uniform_ratings_same_width"] <= row["uniform_ppi_ratings_same_width"]


def test_a_mechanism_that_cannot_reach_a_correlation_says_so():
    out = simulate_active(correlations=(0.9,), mechanisms=("human_noise",), replications=5, items=200, budget=20)
    assert out["rows"] == [{"correlation": 0.9, "mechanism": "human_noise", "seed": [58, 0], "reachable": False}]
    with pytest.raises(ValueError, match="mechanisms"):
        simulate_active(mechanisms=("bad",))


def test_peeking_breaks_fixed_intervals_not_confidence_sequences():
    out = simulate_peeking(studies=400, ratings=200, seed=7)
    assert out["confidence_sequence"] <= 0.05
    assert out["fixed_sample_every_look"] >= 0.15
    assert out["fixed_sample_once_at_end"] <= 0.08  # one planned look is fine


def test_the_command_prints_both_and_names_bad_input():
    buf = StringIO()
    call_command("simulate_policy", "--policy", "peeking", "--studies", "50", "--ratings", "60", "--json", stdout=buf)
    data = json.loads(buf.getvalue())
    assert data["peeking"]["studies"] == 50 and "machine" in data and "date" in data
    buf = StringIO()
    call_command("simulate_policy", "--replications", "20", "--items", "300", "--budget", "40", "--correlations",
                 "0.5", "--studies", "20", "--ratings", "30", stdout=buf)
    text = buf.getvalue()
    assert "saving" in text and "false 'significant'" in text and "seed 58" in text
    with pytest.raises(CommandError, match="correlations"):
        call_command("simulate_policy", "--policy", "active", "--correlations", "1.5", stdout=StringIO())
    with pytest.raises(CommandError, match="budget"):
        call_command("simulate_policy", "--policy", "active", "--items", "100", "--budget", "100", stdout=StringIO())
