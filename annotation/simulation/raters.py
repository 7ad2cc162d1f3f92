"""Simulated raters: answer an assignment as the workspace would submit it, from the latent truth.

    rater_answers(rubric=..., preset=..., item=..., shown=[outputs in shown order], who="rater-1", ...) -> answers
    simulate_ratings(study=..., raters=[users], preset=..., knobs=..., seed=...) -> number of submits (raters take turns)

Every answer goes through the workspace's own services (assignment_next, assignment_submit), so
the engine's order, counterbalancing and validation apply to simulated raters as to people; only
the seeds of its random order are the simulation's own (`stable_key`: the seed and names, never
ids, the secret key or the clock), so a simulated study, the demo above all, is the same every time.
Each answer covers every control of the rubric: scales, accept/reject, labels, highlights,
confidence, reasoning (always where required, at the scale's ends where optional), the item
comment (now and then) and ignoring an item whose context is unsuitable (seed 001's NOTE).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping, Sequence

from annotation import step_questions
from annotation.models import Assignment, Item, Output, Study, StudyMember
from annotation.services.assignments import assignment_next, study_response_order
from annotation.services.ratings import assignment_submit, span_text
from rubrics.schema import COMPARATIVE_KINDS
from annotation.simulation.agent import step_truth_z
from annotation.simulation.comparative import comparative_answer
from annotation.simulation.items import system_effect
from annotation.simulation.latent import (
    Knobs, normal, output_quality, perceived, styled, to_label, to_scale, unit,
)


def value_for(criterion: dict, *, seed: int, preset: str, item_id: str, position: int, system: str, who: str,
              knobs: Knobs, shown_first: bool, style: str = "") -> Any:
    """One rater's (or judge's) value for one scored or labelled criterion of one output; `style`:
    latent.SPAMMER or latent.STRICT for a rater who is more than noisy."""
    kind = criterion["kind"]
    whole = kind in ("binary", "choice") or criterion.get("overall")
    z = output_quality(seed, system_effect(preset, system), item_id, position, None if whole else criterion["key"])
    z = perceived(z, seed=seed, who=who, knobs=knobs, item_id=item_id, position=position,
                  criterion=criterion["key"], shown_first=shown_first)
    z = styled(z, style, seed=seed, who=who, item_id=item_id, position=position, criterion=criterion["key"])
    if kind in ("likert", "numeric"):
        return to_scale(z, criterion["min"], criterion["max"], criterion.get("step", 1) if kind == "numeric" else 1)
    values = [c["value"] for c in criterion["choices"]]  # best first (ACCEPT, TP, ...)
    if kind == "binary":
        return values[0] if z > 0 else values[-1]
    return to_label(z, values)


def planted_value(criterion: dict, truth: Mapping[str, str], *, seed: int, who: str, knobs: Knobs, item_id: str,
                  position: int, shown_first: bool) -> Any | None:
    """One rater's (or judge's) answer to a yes/no question whose truth the simulation planted in the
    output's metadata (annotation.simulation.agent: "call_needed@m2.t0", "answer_supported"); None
    where none is planted."""
    key = criterion["key"]
    if key not in truth or criterion["kind"] != "binary":
        return None
    z = step_truth_z(truth, key, seed=seed, item_id=item_id, position=position)
    z = perceived(z, seed=seed, who=who, knobs=knobs, item_id=item_id, position=position, criterion=key,
                  shown_first=shown_first)
    return criterion["choices"][0 if z > 0 else -1]["value"]


def _confidence(criterion: dict, *, seed: int, who: str, item_id: str, knobs: Knobs) -> int:
    # Surer when the rater's own error on this item is small.
    doubt = abs(knobs.noise * normal(seed, "confidence", who, item_id))
    lo, hi = int(criterion.get("min", 1)), int(criterion.get("max", 5))
    return max(lo, hi - int(doubt * 2))


def _reasoning(criterion: dict, value: Any) -> str:
    for level in criterion.get("levels") or []:
        if str(level["value"]) == str(value):
            label = level.get("label") or ""
            text = (level.get("description") or "").strip().split("\n")[0]
            return f"{criterion['name']}: {label}. {text}".strip()
    return f"{criterion['name']}: {value}, judged against the rubric's description."


def _highlight(content: str, label: str) -> list[dict]:
    """The response's first sentence: the passage a rater marks as relevant."""
    text = span_text(content)
    m = re.search(r"[.!?](\s|$)", text)
    end = m.end(0) if m else len(text)
    end = len(text[:end].rstrip())
    return [{"start": 0, "end": end, "label": label}] if end > 0 else []


def rater_answers(*, rubric: dict, preset: str, item: Item, shown: Sequence[Output], who: str, knobs: Knobs,
                  seed: int, style: str = "") -> dict:
    options = rubric.get("item_options") or {}
    ext = item.external_id
    if options.get("allow_ignore") and (item.metadata or {}).get("note"):
        reasons = options.get("ignore_reasons") or ["The context is unsuitable"]
        return {"responses": {}, "item": {}, "ignored": True, "ignore_reason": reasons[0], "comment": ""}
    responses: dict[str, dict] = {}
    for n, out in enumerate(shown, start=1):
        block: dict[str, Any] = {}
        first = n == 1 and len(shown) > 1
        truth = (out.metadata or {}).get("truth") or {}
        for c in (q for c in rubric["criteria"] if c.get("target", "output") == "output"
                  for q in step_questions.asked(c, out.content, out.kind)):
            kind = c["kind"]
            planted = planted_value(c, truth, seed=seed, who=who, knobs=knobs, item_id=ext, position=out.position,
                                    shown_first=first)
            if planted is not None:
                block[c["key"]] = {"value": planted, "reasoning": ""}
                continue
            if kind == "confidence":
                block[c["key"]] = {"value": _confidence(c, seed=seed, who=who, item_id=ext, knobs=knobs),
                                   "reasoning": ""}
                continue
            if kind == "spans" and "step" in c:
                # A per-step highlight where the simulation planted one (agent: the unsupported answer),
                # seen by a rater as any planted truth is: through their bias and noise.
                z = step_truth_z(truth, c["key"], seed=seed, item_id=ext, position=out.position)
                if z is not None and perceived(z, seed=seed, who=who, knobs=knobs, item_id=ext, position=out.position,
                                               criterion=c["key"]) > 0:
                    block[c["key"]] = {"value": _highlight(step_questions.text_of(out.content, c["step"]),
                                                           (c.get("labels") or [""])[0]), "reasoning": ""}
                continue
            if kind == "spans":
                z = perceived(output_quality(seed, system_effect(preset, out.system), ext, out.position), seed=seed,
                              who=who, knobs=knobs, item_id=ext, position=out.position, criterion=c["key"])
                if z > 0:
                    block[c["key"]] = {"value": _highlight(out.content, (c.get("labels") or [""])[0]),
                                       "reasoning": ""}
                continue
            if kind == "text":
                block[c["key"]] = {"value": f"Notes on response {n}.", "reasoning": ""}
                continue
            value = value_for(c, seed=seed, preset=preset, item_id=ext, position=out.position, system=out.system,
                              who=who, knobs=knobs, shown_first=first, style=style)
            mode = c.get("reasoning", "none")
            at_end = kind in ("likert", "numeric") and value in (c["min"], c["max"])
            reasoning = _reasoning(c, value) if mode == "required" or (mode == "optional" and at_end) else ""
            block[c["key"]] = {"value": value, "reasoning": reasoning}
        responses[str(n)] = block
    item_block = {c["key"]: comparative_answer(c, preset=preset, item=item, shown=shown, who=who, knobs=knobs, seed=seed)
                  for c in rubric["criteria"] if c["kind"] in COMPARATIVE_KINDS}
    comment = ""
    if options.get("comment") and unit(seed, "comment", who, ext) < 0.2:
        comment = "Borderline between two levels; my reasoning says why I chose as I did."
    return {"responses": responses, "item": item_block, "ignored": False, "ignore_reason": "", "comment": comment}


def stable_key(seed: int, *names: object) -> int:
    """A signed 64-bit key fixed by the seed and the names (an item's place in the study's random order,
    a rater's starting point, an item's order seed): never the database's ids, the secret key or the clock,
    so that a simulated study is the same on every machine and in every database."""
    digest = hashlib.sha256("/".join(["concord-simulation", str(seed), *map(str, names)]).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def stable_pick_keys(study: Study, seed: int) -> None:
    """The study's items' places in its random order (drawn by PostgreSQL at import) from the seed and
    their external ids."""
    items = list(Item.objects.filter(study=study).only("id", "external_id"))
    for item in items:
        item.pick_key = stable_key(seed, "pick", item.external_id)
    Item.objects.bulk_update(items, ["pick_key"])


def _stable_walks(study: Study, raters: Mapping[str, Any], seed: int) -> None:
    """Each simulated rater starts their walk at a point fixed by the seed and their name (not their id)."""
    if study.randomize_items:
        for name, rater in raters.items():
            StudyMember.objects.filter(study=study, user=rater, pick_cursor__isnull=True).update(
                pick_cursor=stable_key(seed, "start", name))


def _stable_order(study: Study, a, positions: list[int], seed: int) -> None:
    """The order shown in the assignment's slot, from the study's design with an item seed fixed by the seed
    and the item's external id in place of the secret one (which depends on the key and the ids)."""
    if a.slot is None:
        return
    order = study_response_order(study, item_id=a.item_id, slot=a.slot, n_outputs=len(positions),
                                 item_seed=stable_key(seed, "order", a.item.external_id))
    permutation = [positions[i] for i in order]
    if permutation != a.permutation:
        Assignment.objects.filter(pk=a.pk).update(permutation=permutation)
        a.permutation = permutation


def simulate_ratings(*, study: Study, raters: Sequence, preset: str, knobs: Knobs, seed: int,
                     who: Sequence[str] | None = None, styles: Mapping[str, str] | None = None) -> int:
    """Raters take turns, one item each, as people working side by side would, until the engine has
    nothing left for any of them (so with fewer raters per item than raters, work is shared out).
    `styles`: {name: latent.SPAMMER or latent.STRICT} for the raters who are more than noisy."""
    rubric = study.rubric_version.definition
    names = list(who) if who else [f"rater-{k + 1}" for k in range(len(raters))]
    busy = dict(zip(names, raters))
    _stable_walks(study, busy, seed)
    submits = 0
    while busy:
        for name, rater in list(busy.items()):
            a = assignment_next(study=study, rater=rater)
            if a is None:
                del busy[name]
                continue
            by_position = {o.position: o for o in a.item.outputs.all()}
            _stable_order(study, a, sorted(by_position), seed)
            shown = [by_position[p] for p in a.permutation]
            answers = rater_answers(rubric=rubric, preset=preset, item=a.item, shown=shown, who=name,
                                    knobs=knobs, seed=seed, style=(styles or {}).get(name, ""))
            a.study = study
            ms = int(20_000 + 100_000 * unit(seed, "time", name, a.item.external_id))
            assignment_submit(assignment=a, answers=answers, time_on_task_ms=ms)
            submits += 1
    return submits
