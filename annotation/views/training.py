"""The training phase's pages: after each training item the expected answer and why, and after the
last the result, with the one retry (annotation.services.training)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.models import Assignment, Study
from annotation.services.ratings import RatingRow, attention_passed
from annotation.services.training import TrainingError, training_retry, training_state
from annotation.views.language import rater_study, rater_study_and_assignment


def _shown_text(value: Any, number_of: dict[int, int], system_number: dict[str, int]) -> str:
    """An answer as the rater saw it: output ids and system names become 'Response n' (a rater never
    learns which system wrote what)."""
    if isinstance(value, dict) and "shown" in value:
        if "winner" in value:
            w = value["winner"]
            return "a tie" if w == "tie" else f"Response {number_of.get(w, '?')}" + (
                f" ({value['strength']} better)" if value.get("strength") else " is better")
        if "ranks" in value:
            order = sorted(zip(value["ranks"], value["shown"]))
            return " > ".join(f"Response {number_of.get(pk, '?')}" for _, pk in order)
        return f"best Response {number_of.get(value['best'], '?')}, worst Response {number_of.get(value['worst'], '?')}"
    if isinstance(value, list) and value and all(isinstance(v, str) and v in system_number for v in value):
        return " > ".join(f"Response {system_number[v]}" for v in value)  # comparative gold: systems best first
    if isinstance(value, str) and value in system_number:
        return f"Response {system_number[value]} is best"
    return str(value)


def feedback_rows(study: Study, assignment: Assignment) -> list[dict[str, Any]]:
    """Per question with an expected answer: what the rater gave, what was expected, and whether it matched."""
    rubric = study.rubric
    outputs = {o.position: o for o in assignment.item.outputs.all()}
    shown = [outputs[p] for p in assignment.permutation if p in outputs]
    number_of = {o.pk: n for n, o in enumerate(shown, start=1)}
    system_number = {o.system: n for n, o in enumerate(shown, start=1)}
    systems = {o.pk: o.system for o in shown}
    ratings = list(assignment.ratings.all())
    rows = [RatingRow(number_of.get(r.output_id) if r.output_id else None, r.criterion, r.value, r.score, r.reasoning)
            for r in ratings]
    names = {c["key"]: c.get("name", c["key"]) for c in rubric["criteria"]}
    out = []
    for key, expected in (assignment.item.gold or {}).items():
        if key not in names:
            continue
        mine = [r for r in rows if r.criterion == key]
        given = "; ".join((f"Response {r.response}: " if r.response else "") + _shown_text(r.value, number_of, system_number)
                          for r in sorted(mine, key=lambda r: r.response or 0)) or "—"
        if isinstance(expected, dict) and not isinstance(expected, list):
            want = "; ".join(f"Response {n}: {expected[str(p)]}" for n, p in enumerate(assignment.permutation, start=1)
                             if str(p) in expected)
        else:
            want = _shown_text(expected, number_of, system_number)
        right = attention_passed(rubric, {key: expected}, rows, assignment.permutation, systems)
        out.append({"name": names[key], "given": given, "expected": want, "right": right})
    return out


@login_required
@require_GET
def training_feedback(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    study, assignment = rater_study_and_assignment(request, slug, token)
    if not assignment.item.is_training or assignment.status != Assignment.Status.SUBMITTED:
        return redirect("workspace", slug=study.slug)
    state = training_state(study, request.user)
    return render(request, "annotation/training_feedback.html", {
        "study": study, "assignment": assignment, "rows": feedback_rows(study, assignment),
        "explanation": assignment.item.explanation, "right": assignment.attention_passed, "training": state})


@login_required
@require_POST
def training_retry_view(request: HttpRequest, slug: str) -> HttpResponse:
    study = rater_study(request, slug)
    try:
        training_retry(study=study, rater=request.user)
    except TrainingError as exc:
        messages.error(request, str(exc).capitalize() + ".")
    return redirect("workspace", slug=study.slug)
