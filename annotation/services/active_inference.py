"""Active inference in a study (issue 58 §1, §5): which items go to human raters, drawn round by round.

    active_draw(study=, jury=) -> dict       # the next round: each item's probability, drawn and stored
    active_pilot_request(study_id=)          # a judge run ended with scores: ask for the pilot (round 0)
    active_after_submit(study=)              # the round's last rating in: ask the judges app for the next
    active_prediction(study=, jury=) -> dict # what the policy should save, before (or after) humans rate

`jury` is plain data from the judges app (judges.selectors.study_jury): one row per scored output,
(item id, output id, [each judge's score of the policy's criterion]). The human side never reads judge
tables itself. Each item's uncertainty is the jury's spread, sqrt(mean over its outputs of the
judges' variance); its judge score per output is the jury's mean.

Round 0 is a uniform pilot (a share `pilot` of the items at probability B/n); each later round takes
the next slice of a fixed random order of the remaining items and gives them calibrated_probabilities
from every rating so far (π ∝ the predicted residual size, floor `floor`), B/n per item in expectation.
An item drawn gets raters_per_item raters (slots_wanted), one not drawn none; its probability is
stored on the item and copied into each of its assignments, so every export can reweight.

Rounds draw themselves: the pilot when a judge run on the study ends with scores, each later round
when the last item of the round before has its raters; both ask judges.tasks.active_draw_next (by
name: the judges app reads the jury and imports this module, not the other way) for round k. The
draw locks the study's items and draws only when round k is the next one, so two requests for the
same round (two last ratings submitted at once, two runs ending together) draw it once.
`manage.py draw_humans` draws the next round by hand.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, F, Q

from annotation.background_requests import background_requests_allowed
from annotation.models import Assignment, Item, Rating, Study
from annotation.services.sampling_policy import ACTIVE_INFERENCE, policy_name
from config.celery import registered_task

if TYPE_CHECKING:
    import numpy as np

# numpy and the design (scipy.stats) are imported by the functions that draw and predict: every rating's
# submit imports this module (active_after_submit), and so does every process that loads the URL conf.

DRAW_TASK = "judges.tasks.active_draw_next"
log = logging.getLogger(__name__)

JuryRows = Iterable[tuple[int, int, Sequence[float | None]]]


class ActiveDrawError(ValueError):
    pass


def _spec(study: Study) -> dict:
    if policy_name(study) != ACTIVE_INFERENCE:
        raise ActiveDrawError(f"study {study.slug} does not use the active_inference sampling policy")
    return study.sampling_policy


def _jury_by_item(item_ids: list[int], jury: JuryRows) -> tuple[np.ndarray, dict[int, float]]:
    """(u per item in item_ids' order, the jury's mean score per output). An item no two judges scored
    gets the largest u of the others: unknown is treated as unsure."""
    import numpy as np

    spread: dict[int, list[float]] = defaultdict(list)
    f: dict[int, float] = {}
    for item, output, scores in jury:
        values = np.array([s for s in scores if s is not None], dtype=float)
        if values.size:
            f[output] = float(values.mean())
        if values.size >= 2:
            spread[item].append(float(values.var(ddof=1)))
    u = np.array([math.sqrt(np.mean(spread[i])) if spread.get(i) else np.nan for i in item_ids])
    known = u[np.isfinite(u)]
    return np.where(np.isfinite(u), u, known.max() if known.size else 0.0), f


def _human_residuals(study: Study, spec: dict, f: dict[int, float]) -> dict[int, float]:
    """Per rated item, its human − jury residual (mean over its outputs of the human mean minus the
    jury's mean), before centring."""
    import numpy as np

    per_output: dict[tuple[int, int], list[float]] = defaultdict(list)
    rows = (Rating.objects.filter(assignment__study=study, assignment__status=Assignment.Status.SUBMITTED,
                                  assignment__is_attention_check=False, criterion=spec["criterion"],
                                  score__isnull=False)
            .values_list("assignment__item_id", "output_id", "score"))
    for item, output, score in rows:
        per_output[(item, output)].append(score)
    by_item: dict[int, list[float]] = defaultdict(list)
    for (item, output), scores in per_output.items():
        if output in f:
            by_item[item].append(float(np.mean(scores)) - f[output])
    return {item: float(np.mean(r)) for item, r in by_item.items()}


def _items(study: Study) -> list[Item]:
    return list(Item.objects.filter(study=study, is_attention_check=False, is_training=False).order_by("pk"))


def _map_inputs(study, spec, items, u, f) -> tuple[np.ndarray, np.ndarray]:
    """(u, centred residual) of the rated items, centred with weights 1/π."""
    import numpy as np

    resid = _human_residuals(study, spec, f)
    rated = [k for k, it in enumerate(items) if it.pk in resid]
    r = np.array([resid[items[k].pk] for k in rated])
    w = np.array([1 / (items[k].sampling_probability or 1.0) for k in rated])  # a study without the policy: 1
    centre = float(np.sum(w * r) / w.sum()) if rated else 0.0
    return u[rated], r - centre


def round_open(study: Study) -> bool:
    """Whether an item drawn for humans still waits for one of its raters."""
    done = Count("assignments", filter=Q(assignments__status=Assignment.Status.SUBMITTED,
                                         assignments__is_attention_check=False))
    return (Item.objects.filter(study=study, slots_wanted__gt=0, sampling_probability__isnull=False)
            .annotate(done=done).filter(done__lt=F("slots_wanted")).exists())


def _rounds(spec: dict, n: int) -> tuple[int, int]:
    """(items in the pilot, items in each later round) of a study of n items."""
    n_pilot = max(1, int(round(spec["pilot"] * n)))
    return n_pilot, (math.ceil((n - n_pilot) / spec["rounds"]) if n > n_pilot else 0)


def _round_after(spec: dict, n: int, done: int) -> int:
    """The round that draws next once `done` of the n items are drawn."""
    n_pilot, per_round = _rounds(spec, n)
    return 0 if done < n_pilot else 1 + (done - n_pilot) // max(per_round, 1)


def next_round(study: Study) -> int | None:
    """The round an active_inference study draws next; None when every item is drawn (or no policy)."""
    if policy_name(study) != ACTIVE_INFERENCE:
        return None
    counts = Item.objects.filter(study=study, is_attention_check=False, is_training=False).aggregate(
        n=Count("pk"), done=Count("pk", filter=Q(sampling_probability__isnull=False)))
    if counts["done"] >= counts["n"]:
        return None
    return _round_after(study.sampling_policy, counts["n"], counts["done"])


def _ask(study: Study, round_no: int) -> None:
    """Queue the draw of round `round_no`, after the caller's transaction commits. The cache key only
    spares the broker repeats (a burst of submits); the draw's own check is what keeps it to once. It
    names the study's creation too: ids come back in a new database (a test run), keys may outlive it."""
    if not background_requests_allowed():
        return
    if cache.add(f"active-draw-due:{study.pk}:{study.created_at.timestamp()}:{round_no}", 1, timeout=10):
        try:
            registered_task(DRAW_TASK).delay(study.pk, round_no)
        except Exception:  # the rating (or the judge run) is stored: a lost request leaves draw_humans to do it
            log.exception("could not ask for round %s of study %s", round_no, study.pk)


def active_rounds_waiting() -> list[Study]:
    """The open active_inference studies whose next round is due and not drawn: no item drawn for humans
    still waits for a rater, and items are left to draw. A request the broker lost leaves a study here
    (judges.tasks.requeue_lost_draws draws it); one in transit does too, and its draw then finds it drawn."""
    studies = Study.objects.filter(status=Study.Status.OPEN, sampling_policy__name=ACTIVE_INFERENCE)
    return [s for s in studies if next_round(s) is not None and not round_open(s)]


def active_pilot_request(*, study_id: int) -> None:
    """A judge run on the study ended with scores: when the study is active_inference and its pilot is
    not drawn yet, ask for it (on commit)."""
    def check() -> None:
        study = Study.objects.filter(pk=study_id).first()
        if study is not None and next_round(study) == 0:
            _ask(study, 0)

    transaction.on_commit(check)


def active_after_submit(*, study: Study) -> None:
    """After a rating of an active_inference study: once every item drawn for humans has its raters and
    items are left to draw, ask for the next round. Looked at after the commit: two last ratings
    submitted at once each see the other's only then (inside, neither would, and no round be asked)."""
    if policy_name(study) != ACTIVE_INFERENCE:
        return

    def check() -> None:
        # before the pilot nothing is asked here: round 0 waits for the judges (active_pilot_request)
        round_no = next_round(study)
        if round_no and not round_open(study):
            _ask(study, round_no)

    transaction.on_commit(check)


def active_draw(*, study: Study, jury: JuryRows, seed: int | None = None,
                only_when_done: bool = False, round_no: int | None = None) -> dict[str, Any]:
    """Draw the next round of the study's items for humans; returns what it did (round, items, drawn,
    expected, left). ActiveDrawError when the study has no such policy, the budget exceeds the
    items, every item is drawn already, (only_when_done) an item of the round before still waits
    for a rater, or (round_no) the next round is not that one: it was drawn already."""
    import numpy as np

    from annotation.stats.active_design import calibrated_probabilities

    spec = _spec(study)
    with transaction.atomic():
        items = list(Item.objects.select_for_update().filter(study=study, is_attention_check=False,
                                                             is_training=False).order_by("pk"))
        n = len(items)
        if not 0 < spec["budget"] <= n:
            raise ActiveDrawError(f"sampling_policy.budget: {spec['budget']} is more than the study's {n} items")
        share = spec["budget"] / n
        u, f = _jury_by_item([it.pk for it in items], jury)
        order = np.random.default_rng([study.pk, 58]).permutation(n)  # fixed per study: pilot, then rounds
        n_pilot, per_round = _rounds(spec, n)
        undrawn = [k for k in order if items[k].sampling_probability is None]
        if not undrawn:
            raise ActiveDrawError(f"every item of {study.slug} is drawn already")
        done = n - len(undrawn)
        # under the items' lock: a second request for the same round sees it drawn and draws nothing
        if round_no is not None and _round_after(spec, n, done) != round_no:
            raise ActiveDrawError(f"round {round_no} of {study.slug} is drawn already")
        if only_when_done and round_open(study):
            raise ActiveDrawError(f"the last round of {study.slug} still waits for ratings")
        round_no = _round_after(spec, n, done)
        chunk = np.array(undrawn[:n_pilot - done] if round_no == 0 else undrawn[:per_round])
        rated_u, resid = _map_inputs(study, spec, items, u, f)
        if round_no == 0 or resid.size < 2:
            pi = np.full(chunk.size, share)
        else:
            pi = calibrated_probabilities(u[chunk], share * chunk.size, rated_u, resid, floor=spec["floor"])
        rng = np.random.default_rng(seed)
        chosen = rng.random(chunk.size) < pi
        for k, p, c in zip(chunk, pi, chosen):
            items[k].sampling_probability = float(p)
            items[k].slots_wanted = study.raters_per_item if c else 0
        Item.objects.bulk_update([items[k] for k in chunk], ["sampling_probability", "slots_wanted"])
    return {"round": int(round_no), "items": int(chunk.size), "drawn": int(chosen.sum()),
            "expected": float(pi.sum()), "left": len(undrawn) - int(chunk.size)}


def active_prediction(*, study: Study, jury: JuryRows, budget: int | None = None,
                      floor: float | None = None) -> dict[str, Any]:
    """What the active design should save against uniform sampling, for the same interval width.

    From the human ratings so far when at least 10 rated items have judge scores (the map u → E[r²|u]
    learned from them, "pilot"); else from the judges' scores alone, taking each item's jury variance
    as its expected squared error ("judges": an upper bound, right only if the disagreement is the error).
    """
    from annotation.stats.active_design import predicted_saving, residual_map

    spec = study.sampling_policy if policy_name(study) == ACTIVE_INFERENCE else {}
    items = _items(study)
    n = len(items)
    budget = budget or spec.get("budget") or max(1, n // 10)
    floor = floor if floor is not None else spec.get("floor", 0.2)
    if n == 0:
        return {"items": 0, "reason": "the study has no items yet"}
    u, f = _jury_by_item([it.pk for it in items], jury)
    if not f:
        return {"items": n, "reason": "no judge has scored the study yet"}
    budget = min(budget, n)
    rated_u, resid = _map_inputs(study, spec or {"criterion": _first_score_key(study)}, items, u, f)
    if resid.size >= 10:
        m, source = residual_map(u, rated_u, resid ** 2), "pilot"
    else:
        m, source = u ** 2, "judges"
    out = predicted_saving(m, budget, floor=floor)
    return {"items": n, "budget": budget, "floor": floor, "source": source, "rated_items": int(resid.size),
            "saving": out["saving"], "oracle_saving": out["oracle_saving"],
            "uniform_ratings_same_width": budget / max(1 - out["saving"], 1e-9)}


def _first_score_key(study: Study) -> str | None:
    return next((c["key"] for c in study.rubric["criteria"] if c["kind"] in ("likert", "numeric")), None)


def drawn_items(study: Study) -> dict[int, tuple[float, bool]] | None:
    """{item id: (its draw probability, whether it was drawn for humans)} of the items drawn so far under
    the active_inference policy; None under any other design. What the report's IPW estimate reads."""
    if policy_name(study) != ACTIVE_INFERENCE:
        return None
    rows = Item.objects.filter(study=study, sampling_probability__isnull=False).values_list(
        "pk", "sampling_probability", "slots_wanted")
    return {pk: (p, bool(wanted)) for pk, p, wanted in rows}
