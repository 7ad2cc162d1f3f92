"""Concord's statistics as a library: import it in a notebook or a script, no Django needed.

These are the very functions the study report, the exports and the management commands
(`agreement`, `estimate`, `comparisons`, `plan_study`, `gold_eval`) call; this module only
names them in one place. Inputs are plain data (numpy arrays, pandas frames, lists); most
results are `Stat(value, reason, ci)`: `value` is None, with `reason`, when the statistic is
undefined for the data. Each function's docstring names its reference; docs/statistics.md
lists them all.

    >>> import numpy as np
    >>> from concord.stats import krippendorff_alpha
    >>> krippendorff_alpha(np.array([[1, 1], [2, 2], [3, 3.0]]), "interval").value
    1.0
"""

from annotation.stats.active import (
    active_probabilities, choose_design, hajek_mean, ipw_ppi_lambda, ipw_ppi_mean, ipw_ppi_systems, judge_uncertainty,
)
from annotation.stats.active_design import calibrated_probabilities, predicted_saving, residual_map
from annotation.stats.agreement import matrix_agreement
from annotation.stats.alt_test import alt_test, benjamini_yekutieli
from annotation.stats.bias import length_controlled, self_preference, verbosity
from annotation.stats.bootstrap import bootstrap_ci
from annotation.stats.calibration import calibration
from annotation.stats.comparison_files import comparisons_report, read_comparisons
from annotation.stats.classification import classification_report, gold_eval
from annotation.stats.comparisons import (
    best_worst_counts, bradley_terry, kendall_w, pairs_from_best_worst, pairs_from_pairwise, pairs_from_ranking,
    position_effect, wilson_interval, win_rates,
)
from annotation.stats.consensus import preference_pairs, weighted_consensus
from annotation.stats.correlation import judge_vs_humans, lin_ccc, mean_difference
from annotation.stats.icc import icc
from annotation.stats.kappa import cohen_kappa, fleiss_kappa, percent_agreement
from annotation.stats.krippendorff import krippendorff_alpha, krippendorff_all
from annotation.stats.pairwise import kendall_tau_b, pearson, spearman
from annotation.stats.power import (
    binomial_power, items_needed, items_table, judgements_needed, paired_power, pairwise_plan, scores_plan,
)
from annotation.stats.ppi import estimate_system, estimate_systems, human_only, ppi_lambda, ppi_mean
from annotation.stats.ranking import compare_systems, holm
from annotation.stats.raters import (
    LabelError, LabelModel, ModelChoice, PairwiseModel, RaterEffects, best_label_model, dawid_skene, glad,
    label_data, mace, majority_vote, noisy_bradley_terry, one_coin, rater_effects,
)
from annotation.stats.report import agreement_report
from annotation.stats.result import Stat
from annotation.stats.sequential import (
    asymptotic_cs, asymptotic_rho, confidence_sequence, fixed_sample_interval, ipw_ppi_confidence_sequence,
)
from annotation.stats.tables import read_labels, read_ratings

__all__ = [
    "Stat",
    # agreement between raters
    "krippendorff_alpha", "krippendorff_all", "icc", "fleiss_kappa", "cohen_kappa", "percent_agreement",
    "matrix_agreement", "agreement_report",
    # correlations, a judge against the humans
    "pearson", "spearman", "kendall_tau_b", "lin_ccc", "mean_difference", "judge_vs_humans", "alt_test",
    # comparative judgements
    "bradley_terry", "win_rates", "best_worst_counts", "kendall_w", "position_effect", "wilson_interval",
    "pairs_from_pairwise", "pairs_from_ranking", "pairs_from_best_worst",
    # consensus that models the raters: labels (posteriors, rater accuracy), comparisons, scales
    "label_data", "majority_vote", "dawid_skene", "one_coin", "glad", "mace", "best_label_model",
    "noisy_bradley_terry", "rater_effects", "LabelModel", "ModelChoice", "PairwiseModel", "RaterEffects",
    "LabelError",
    # consensus, systems, multiple testing
    "weighted_consensus", "preference_pairs", "compare_systems", "holm", "benjamini_yekutieli", "bootstrap_ci",
    # judges: PPI, calibration, bias, gold labels
    "estimate_system", "estimate_systems", "human_only", "ppi_mean", "ppi_lambda", "calibration",
    "verbosity", "length_controlled", "self_preference", "classification_report", "gold_eval",
    # humans where the judges are unsure (active inference) and intervals valid at any look
    "judge_uncertainty", "active_probabilities", "choose_design", "residual_map", "calibrated_probabilities",
    "predicted_saving", "ipw_ppi_mean", "ipw_ppi_lambda",
    "ipw_ppi_systems", "hajek_mean",
    "confidence_sequence", "asymptotic_cs", "asymptotic_rho", "ipw_ppi_confidence_sequence",
    "fixed_sample_interval",
    # planning: power
    "paired_power", "items_needed", "items_table", "scores_plan", "binomial_power", "judgements_needed",
    "pairwise_plan",
    # the files the management commands read
    "read_ratings", "read_labels", "read_comparisons", "comparisons_report",
]
