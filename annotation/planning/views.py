"""The study plan page: a GET form, pre-filled from the study itself as a pilot when it has
ratings, and the plan it gives. Readers only (admins and the study's researchers): anyone
else gets 404, as on the report page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation.access import get_study_for_reader
from annotation.planning.forms import FIELDS, PlanForm

# What the form shows before anything is entered, where the pilot has no estimate.
PAGE_DEFAULTS: dict[str, Any] = {"delta": 0.5, "sd": 1.0, "icc": 0.5, "corr": 0.5, "raters": 3, "power": 0.8,
                                 "alpha": 0.05, "win_prob": 0.6, "ties": 0.0}


FIELD_GROUPS = (("Scores", ("delta", "sd", "icc", "corr", "raters")),
                ("Comparisons", ("win_prob", "bt_diff", "ties")),
                ("Test", ("power", "alpha")))


def _pilot_hint(name: str, values: dict[str, float], missing: dict[str, str]) -> str:
    if name in values:
        return f"pilot estimate {values[name]:.3g}"
    return f"no pilot estimate: {missing[name]}" if name in missing else ""


@login_required
@require_GET
def study_plan_page(request: HttpRequest, slug: str) -> HttpResponse:
    # here, not at the top: the planning modules import scipy, pandas and matplotlib, which the URL conf
    # (every web worker, Celery worker and manage.py command) would otherwise load at start
    from annotation.planning.active import active_plan
    from annotation.planning.pilot import has_ratings, pilot_estimates, score_criteria
    from annotation.planning.plan import pilot_inputs, study_plan
    from annotation.planning.plots import power_curves
    from annotation.stats.power import InvalidArgument

    study = get_study_for_reader(request.user, slug)
    criteria = [(c["key"], c.get("name", c["key"])) for c in score_criteria(study)]
    keys = [k for k, _ in criteria]
    asked = request.GET.get("criterion")
    pilot = pilot_estimates(study, criterion=asked if asked in keys else None)
    pilot_values, pilot_missing = pilot_inputs(pilot) if has_ratings(pilot) else ({}, {})
    initial = {**PAGE_DEFAULTS, **{k: round(v, 3) for k, v in pilot_values.items()}}
    if pilot["scores"]:
        initial["criterion"] = pilot["scores"]["criterion"]
    submitted = any(name in request.GET for name in (*FIELDS, "criterion"))
    form = PlanForm(request.GET if submitted else initial, criteria=criteria)
    plan = None
    if form.is_valid():
        # The form's values are the plan's inputs; the pilot only pre-filled them.
        try:
            plan = study_plan(form.entered())
        except InvalidArgument as exc:
            form.add_error(exc.argument if exc.argument in form.fields else None, exc.message)
    context = {
        "study": study, "form": form, "plan": plan, "pilot": pilot if has_ratings(pilot) else None,
        "figure": power_curves(plan) if plan else None,
        "active": active_plan(study),
        "groups": [(title, [{"field": form[n], "pilot": _pilot_hint(n, pilot_values, pilot_missing)} for n in names])
                   for title, names in FIELD_GROUPS],
    }
    return render(request, "annotation/plan.html", context)
