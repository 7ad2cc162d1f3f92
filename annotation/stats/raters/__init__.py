"""Consensus that models the raters: who to trust for labels, and how strict each rater is on a scale.

Categorical criteria (binary, choice, nominal codes) — parallel integer arrays item, rater, label
(`label_data` validates them); each method returns a LabelModel (posteriors per unit, accuracy
and the method's own estimates per rater, log-likelihood and BIC):
    majority_vote, dawid_skene, one_coin, glad, mace; best_label_model picks by BIC.
Comparisons (A/B) — noisy_bradley_terry: output strengths, rater reliability and side bias.
Scales (Likert, numeric) — rater_effects: adjusted mean per output with its interval, each
rater's bias and noise SD.

Pure numpy/scipy, no Django. Checked against crowd-kit 1.4.2 and statsmodels' MixedLM
(tests/stats/test_rater_models*.py).
"""

from .data import LabelError, LabelModel, Labels, label_data
from .dawid_skene import dawid_skene, majority_vote, one_coin
from .effects import RaterEffects, rater_effects
from .glad import glad
from .mace import mace
from .pairwise import PairwiseModel, noisy_bradley_terry
from .selection import METHODS, ModelChoice, best_label_model

__all__ = [
    "LabelError", "LabelModel", "Labels", "label_data",
    "majority_vote", "dawid_skene", "one_coin", "glad", "mace", "METHODS", "ModelChoice", "best_label_model",
    "PairwiseModel", "noisy_bradley_terry", "RaterEffects", "rater_effects",
]
