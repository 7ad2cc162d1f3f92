"""Judge methods: pure async orchestration over a backend (no Django).

Every method takes (backend or stages, rubric dict, targets, MethodSettings, ...) and
returns one result per (output, criterion) - pairwise returns one per pair, ranking one per
item and best_worst one per tuple (item-level results, output None).
"""
from judges.methods.base import CriterionResult, MethodSettings, Pricing, Target, targets_for
from judges.methods.consistency import self_consistency
from judges.methods.direct import all_in_one, classify, per_criterion
from judges.methods.ensemble import Member, learn_weights, weighted_ensemble, weighted_vote
from judges.methods.escalation import Stage, escalation, risk_flags
from judges.methods.geval import geval
from judges.methods.legacy import legacy
from judges.methods.modular import DEFAULT_RULES, fuse, modular
from judges.methods.pairwise import PairResult, all_pairs, pairwise, position_bias
from judges.methods.best_worst import best_worst
from judges.methods.ranking import ranking

METHODS = {
    "all_in_one": all_in_one,
    "per_criterion": per_criterion,
    "label": classify,
    "legacy": legacy,
    "modular": modular,
    "escalation": escalation,
    "pairwise": pairwise,
    "ranking": ranking,
    "best_worst": best_worst,
    "geval": geval,
    "self_consistency": self_consistency,
}

__all__ = ["METHODS", "CriterionResult", "MethodSettings", "Pricing", "Target", "targets_for", "Stage",
           "PairResult", "DEFAULT_RULES", "Member", "learn_weights", "weighted_ensemble", "weighted_vote", "legacy", "all_in_one", "per_criterion", "classify", "modular", "escalation",
           "pairwise", "ranking", "best_worst", "geval", "self_consistency", "fuse", "risk_flags", "all_pairs", "position_bias"]
