"""A study's sampling policy: how raters' effort is spent (issue 58 §2, §3).

    policy_clean(raw, rubric=) -> dict           # the stored form; StudyError names the bad field
    items_wanted_default(study) -> int            # raters an item wants before its first rating
    adaptive_after_submit(study=, item_id=)       # adaptive redundancy: the item's posterior sets slots_wanted
    active_pair(study=, item_id=, positions=)     # active comparisons: the pair to show, its probability
    policy_methods(study) -> str                  # the design, in words, for the report's methods

{} is the uniform design. "active_inference" (§1) sends each item to humans with a probability drawn
from the judges' uncertainty (annotation.services.active_inference draws it, round by round, and
records it on the item): an item wants raters_per_item raters once drawn, none before or when not
drawn. "adaptive_redundancy" serves an item while its posterior under Dawid–Skene
(annotation.stats.adaptive_redundancy) says it needs another rater, between min_raters and max_raters
(= raters_per_item, so the engine's hard cap and its slots stay as they are). "active_pairs" shows
the pair of an item's outputs chosen by annotation.stats.active_pairs, a share of them uniformly at
random, and records each assignment's sampling probability.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import IntegerField, Value
from django.db.models.functions import Coalesce, Least

from annotation.models import Assignment, Item, Output, Rating, Study

if TYPE_CHECKING:
    import numpy as np

# The statistics (numpy, scipy) are imported by the functions that compute: nearly every view reaches
# this module through wanted_expression, and scipy.stats alone is a second of each process's start.

ADAPTIVE, ACTIVE_PAIRS, ACTIVE_INFERENCE = "adaptive_redundancy", "active_pairs", "active_inference"
NAMES = ("uniform", ADAPTIVE, ACTIVE_PAIRS, ACTIVE_INFERENCE)
SCORE_KINDS = ("likert", "numeric")  # what judges score and an IPW PPI mean is about
ACTIVE_DEFAULTS = {"floor": 0.2, "pilot": 0.1, "rounds": 6}
LABEL_KINDS = ("binary", "choice", "likert")
REFIT_ALWAYS_BELOW = 5000  # labels: refit Dawid–Skene after every rating up to here, then at each 10% more


class PolicyError(ValueError):
    pass


def _label_criterion(rubric: dict, key: str | None) -> dict | None:
    for c in rubric["criteria"]:
        if c["kind"] in LABEL_KINDS and (key is None or c["key"] == key):
            return c
    return None


def _has_pairwise(rubric: dict) -> bool:
    return any(c["kind"] == "pairwise" for c in rubric["criteria"])


def policy_clean(raw: Any, *, rubric: dict) -> dict:
    """The policy as stored, from what a form or the API sent; PolicyError names what is wrong."""
    if raw in (None, "", {}) or (isinstance(raw, dict) and raw.get("name") in (None, "", "uniform")):
        return {}
    if not isinstance(raw, dict):
        raise PolicyError("sampling_policy: give an object with a name, e.g. {\"name\": \"adaptive_redundancy\"}")
    name, params = raw.get("name"), {k: v for k, v in raw.items() if k != "name"}
    if name not in NAMES:
        raise PolicyError(f"sampling_policy.name: one of {', '.join(NAMES)}, got {name!r}")
    if name == ADAPTIVE:
        from annotation.stats.adaptive_redundancy import AdaptivePolicy

        allowed = {"min_raters", "max_raters", "target", "criterion"}
        if extra := sorted(set(params) - allowed):
            raise PolicyError(f"sampling_policy.{extra[0]}: not a parameter of adaptive_redundancy")
        criterion = _label_criterion(rubric, params.pop("criterion", None))
        if criterion is None:
            raise PolicyError("sampling_policy.criterion: adaptive_redundancy needs a binary, choice or likert "
                              "criterion of the rubric")
        if _has_pairwise(rubric):
            raise PolicyError("sampling_policy.name: adaptive_redundancy is for labels and scales, not pairwise studies")
        try:
            policy = AdaptivePolicy(**params)
        except (TypeError, ValueError) as e:
            raise PolicyError(f"sampling_policy.{e}") from None
        return {**policy.as_dict(), "target": float(policy.target), "criterion": criterion["key"]}
    if name == ACTIVE_INFERENCE:
        return _active_inference_clean(params, rubric)
    if extra := sorted(set(params) - {"random_share"}):
        raise PolicyError(f"sampling_policy.{extra[0]}: not a parameter of active_pairs")
    if not _has_pairwise(rubric):
        raise PolicyError("sampling_policy.name: active_pairs needs a pairwise criterion in the rubric")
    from annotation.stats.active_pairs import ActivePairsPolicy

    try:
        return ActivePairsPolicy(**params).as_dict()
    except (TypeError, ValueError) as e:
        raise PolicyError(f"sampling_policy.{e}") from None


def _number(params: dict, key: str, *, low: float, high: float, closed_low: bool, what: str) -> float:
    value = params.get(key, ACTIVE_DEFAULTS.get(key))
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
        (low <= value if closed_low else low < value) and value <= high)
    if not ok:
        raise PolicyError(f"sampling_policy.{key}: {what}, got {value!r}")
    return float(value)


def _active_inference_clean(params: dict, rubric: dict) -> dict:
    """{"name": "active_inference", "budget": B, "floor", "pilot", "rounds", "criterion"}: B items rated by
    humans in expectation (of every item, whatever the judges say, a share `floor` of the budget is
    spread evenly), a uniform pilot of `pilot` of the items, then `rounds` rounds."""
    allowed = {"budget", "floor", "pilot", "rounds", "criterion"}
    if extra := sorted(set(params) - allowed):
        raise PolicyError(f"sampling_policy.{extra[0]}: not a parameter of active_inference")
    if _has_pairwise(rubric):
        raise PolicyError("sampling_policy.name: active_inference is for scores, not pairwise studies")
    budget = params.get("budget")
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise PolicyError(f"sampling_policy.budget: the number of items humans rate (in expectation), a whole "
                          f"number of at least 1, got {budget!r}")
    key = params.get("criterion")
    criterion = next((c for c in rubric["criteria"] if c["kind"] in SCORE_KINDS and key in (None, c["key"])), None)
    if criterion is None:
        raise PolicyError("sampling_policy.criterion: active_inference needs a likert or numeric criterion of the "
                          "rubric" + (f" (no such criterion: {key!r})" if key is not None else ""))
    rounds = params.get("rounds", ACTIVE_DEFAULTS["rounds"])
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 1 <= rounds <= 50:
        raise PolicyError(f"sampling_policy.rounds: a whole number from 1 to 50, got {rounds!r}")
    return {"name": ACTIVE_INFERENCE, "budget": budget, "criterion": criterion["key"], "rounds": rounds,
            "floor": _number(params, "floor", low=0, high=1, closed_low=False, what="a share in (0, 1]"),
            "pilot": _number(params, "pilot", low=0, high=0.9, closed_low=False, what="a share in (0, 0.9]")}


def policy_name(study: Study) -> str:
    return (study.sampling_policy or {}).get("name", "uniform")


def items_wanted_default(study: Study) -> int:
    """Raters an item wants while its slots_wanted is empty: the policy's minimum, else raters_per_item."""
    if policy_name(study) == ADAPTIVE:
        return min(int(study.sampling_policy["min_raters"]), study.raters_per_item)
    if policy_name(study) == ACTIVE_INFERENCE:
        return 0  # not drawn yet: the draw sets slots_wanted (raters_per_item or 0) with the item's probability
    return study.raters_per_item


def wanted_expression(study: Study):
    """Raters each item wants now, as an ORM expression: min(raters_per_item, slots_wanted or the default)."""
    whole = IntegerField()
    return Least(Value(study.raters_per_item, output_field=whole),
                 Coalesce("slots_wanted", Value(items_wanted_default(study), output_field=whole), output_field=whole),
                 output_field=whole)


# ---------------------------------------------------------------- adaptive redundancy


def _class_of(criterion: dict, value: Any, score: float | None) -> int | None:
    if criterion["kind"] == "likert":
        return None if score is None else int(round(score)) - int(criterion["min"])
    values = [str(c["value"]) for c in criterion["choices"]]
    return values.index(str(value)) if str(value) in values else None


def _labels(study: Study, criterion: dict) -> list[tuple[int, int | None, int, int]]:
    """(item, output, rater, class) of every submitted label of the criterion, checks and skips left out."""
    rows = (Rating.objects.filter(assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
                                  assignment__is_attention_check=False, assignment__ignored=False,
                                  criterion=criterion["key"])
            .values_list("assignment__item_id", "output_id", "assignment__rater_id", "value", "score"))
    out = []
    for item, output, rater, value, score in rows:
        cls = _class_of(criterion, value, score)
        if cls is not None:
            out.append((item, output, rater, cls))
    return out


def _n_classes(criterion: dict) -> int:
    if criterion["kind"] == "likert":
        return int(criterion["max"]) - int(criterion["min"]) + 1
    return len(criterion["choices"])


def _rater_model(study: Study, labels: list, k: int) -> dict:
    """Dawid–Skene's confusion matrices and class prior for the study's raters, refitted after every
    rating on a small study and after each 10% more labels on a large one (cached per study)."""
    from annotation.stats.raters import dawid_skene, label_data

    key = f"adaptive-fit:{study.pk}:{study.created_at.timestamp()}"  # not another study that reused the id
    cached = cache.get(key)
    n = len(labels)
    if cached and (cached["n"] == n or (n > REFIT_ALWAYS_BELOW and n < cached["n"] * 1.1)):
        return cached
    units = sorted({(i, o) for i, o, _, _ in labels}, key=lambda u: (u[0], u[1] or 0))
    unit_of = {u: n_ for n_, u in enumerate(units)}
    raters = sorted({r for _, _, r, _ in labels})
    rater_of = {r: n_ for n_, r in enumerate(raters)}
    data = label_data([unit_of[(i, o)] for i, o, _, _ in labels], [rater_of[r] for _, _, r, _ in labels],
                      [c for *_, c in labels], n_classes=k, n_items=len(units), n_raters=len(raters))
    fit = dawid_skene(data)
    model = {"n": n, "raters": rater_of, "confusion": fit.rater["confusion"], "prior": fit.class_prior}
    cache.set(key, model, timeout=24 * 3600)
    return model


def adaptive_after_submit(*, study: Study, item_id: int) -> int | None:
    """After a rating of an adaptive study: set how many raters the item wants now (its labels so
    far, plus one while any of its outputs' posterior is below the target); returns that number.
    The item row is locked, so two submits of one item decide one after the other on every label."""
    if policy_name(study) != ADAPTIVE:
        return None
    from annotation.stats.adaptive_redundancy import AdaptivePolicy, item_posterior, needs_another

    spec = study.sampling_policy
    policy = AdaptivePolicy(int(spec["min_raters"]), int(spec["max_raters"]), float(spec["target"]))
    criterion = _label_criterion(study.rubric, spec["criterion"])
    with transaction.atomic():
        Item.objects.select_for_update().filter(pk=item_id).values_list("pk", flat=True).first()
        labels = _labels(study, criterion)
        mine = [row for row in labels if row[0] == item_id]
        # a rater who skipped the item holds a slot without a label: the next rater comes on top of them
        done = Assignment.objects.filter(item_id=item_id, status=Assignment.Status.SUBMITTED,
                                         is_attention_check=False).count()
        n_labels = len({r for _, _, r, _ in mine})
        more = n_labels < policy.min_raters
        if mine and not more:
            model = _rater_model(study, labels, _n_classes(criterion))
            for output in {o for _, o, _, _ in mine}:
                rows = [(model["raters"].get(r, -1), c) for _, o, r, c in mine if o == output]
                post = item_posterior([r for r, _ in rows], [c for _, c in rows], confusion=model["confusion"],
                                      prior=model["prior"])
                more = more or needs_another(post, n_labels, policy)
        wanted = min(policy.max_raters, max(policy.min_raters, done + 1)) if more else done
        Item.objects.filter(pk=item_id).update(slots_wanted=wanted)
    return wanted


# ---------------------------------------------------------------- active comparisons


def _pairwise_key(rubric: dict) -> str:
    return next(c["key"] for c in rubric["criteria"] if c["kind"] == "pairwise")


# The study's pairwise answers summed per (system shown first, system shown second, outcome) in the database:
# a few rows per pair of systems, however many comparisons there are.
_PAIR_COUNTS_SQL = f"""
    SELECT o1.system, o2.system,
           CASE WHEN r.value->>'winner' = 'tie' THEN 'tie'
                WHEN r.value->>'winner' = r.value->'shown'->>0 THEN 'first' ELSE 'second' END, count(*)
    FROM {Rating._meta.db_table} r JOIN {Assignment._meta.db_table} a ON a.id = r.assignment_id
    JOIN {Output._meta.db_table} o1 ON o1.id = (r.value->'shown'->>0)::bigint
    JOIN {Output._meta.db_table} o2 ON o2.id = (r.value->'shown'->>1)::bigint
    WHERE a.study_id = %s AND a.status = 'submitted' AND NOT a.is_attention_check AND r.criterion = %s
    GROUP BY 1, 2, 3
"""


def study_wins(study: Study, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(wins[i, j] of system names[i] over names[j], ties half each way; each system's times shown first
    less times shown second) from the study's submitted pairwise answers. Systems not in `names` are left out."""
    import numpy as np

    index = {s: n for n, s in enumerate(names)}
    wins, balance = np.zeros((len(names), len(names))), np.zeros(len(names))
    with connection.cursor() as cursor:
        cursor.execute(_PAIR_COUNTS_SQL, [study.pk, _pairwise_key(study.rubric)])
        counts = cursor.fetchall()
    for first, second, outcome, n in counts:
        a, b = index.get(first), index.get(second)
        if a is None or b is None or a == b:
            continue
        balance[a] += n
        balance[b] -= n
        if outcome == "tie":
            wins[a, b] += 0.5 * n
            wins[b, a] += 0.5 * n
        else:
            wins[(a, b) if outcome == "first" else (b, a)] += n
    return wins, balance


def active_pair(*, study: Study, item_id: int, positions: list[int]) -> tuple[list[int], float, str]:
    """(indexes into `positions` in the order shown, the pair's sampling probability, "random" or
    "active") for a new assignment of the item, from the study's pairwise answers so far."""
    import numpy as np

    from annotation.stats.active_pairs import ActivePairsPolicy, choose_pairs

    spec = study.sampling_policy
    policy = ActivePairsPolicy(random_share=float(spec["random_share"]))
    systems_here = dict(Output.objects.filter(item_id=item_id).values_list("position", "system"))
    names = sorted(set(systems_here.values()))
    wins, balance = study_wins(study, names)
    choice = choose_pairs(wins, balance, policy=policy, rng=np.random.default_rng())[0]
    by_system = {s: [p for p, name in systems_here.items() if name == s] for s in names}
    order = [positions.index(by_system[names[choice.left]][0]), positions.index(by_system[names[choice.right]][0])]
    return order, choice.probability, choice.how


# ---------------------------------------------------------------- words


def policy_methods(study: Study) -> str:
    """One or two sentences for the report's methods paragraph; empty under the uniform design."""
    spec, name = study.sampling_policy or {}, policy_name(study)
    if name == ADAPTIVE:
        return (f"Raters were assigned adaptively: each item got at least {spec['min_raters']} and at most "
                f"{spec['max_raters']} raters, another one while the most likely answer to “{spec['criterion']}” "
                f"had a Dawid–Skene posterior below {spec['target']:g} (adaptive redundancy).")
    if name == ACTIVE_PAIRS:
        return (f"Pairs were chosen actively: {spec['random_share']:.0%} of comparisons drew a pair uniformly at "
                "random, the rest showed the pair whose order was least settled under the current Bradley–Terry "
                "fit; each comparison's sampling probability is recorded, and the position of each system balanced.")
    if name == ACTIVE_INFERENCE:
        return (f"Items went to human raters by active statistical inference (Zrnic & Candès 2024): a uniform pilot "
                f"of {spec['pilot']:.0%} of the items, then {spec['rounds']} rounds in which each item's probability "
                f"grew with the residual size predicted from the judges' disagreement on “{spec['criterion']}” "
                f"(learned from the ratings so far), {spec['floor']:.0%} of the budget spread evenly, "
                f"{spec['budget']} items rated in expectation. Each item's probability is recorded; means are "
                "inverse-probability-weighted prediction-powered estimates with power tuning (PPI++), with "
                "normal 95% intervals.")
    return ""
