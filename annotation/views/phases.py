"""The participant phases on the workspace page (annotation.services.phases): consent, the pre- and
post-study questionnaires, the instructions with their comprehension check. Each form posts here and
goes back to the workspace, which shows the next phase; wrong answers come back beside their fields."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotation.questionnaires import QUESTIONNAIRES, AnswersError, answers_from_form
from annotation.services.crowd import crowd_state
from annotation.services.phases import PhaseOrderError, phase_consent, phase_instructions, phase_questionnaire
from annotation.views.language import rater_study
from annotation.views.workspace import NOT_YOUR_STEP, next_screen


def _write(request: HttpRequest, study, write, questions: list[dict]) -> HttpResponse:
    answers = answers_from_form(questions, request.POST)
    try:
        write(answers)
    except AnswersError as exc:
        return next_screen(request, study, errors=exc.errors, answers=answers, status=400)
    except PhaseOrderError:
        messages.error(request, NOT_YOUR_STEP)  # the reason is for API callers
    return redirect("workspace", slug=study.slug)


@login_required
@require_POST
def consent_view(request: HttpRequest, slug: str) -> HttpResponse:
    study = rater_study(request, slug)
    agree = request.POST.get("agree") == "yes"
    return _write(request, study, lambda _: phase_consent(study=study, rater=request.user, agree=agree), [])


@login_required
@require_POST
def questionnaire_view(request: HttpRequest, slug: str, which: str) -> HttpResponse:
    study = rater_study(request, slug)
    key = f"{which}_questionnaire"
    questions = study.phases[key]["questions"] if key in QUESTIONNAIRES and key in study.phases else []
    return _write(request, study, lambda answers: phase_questionnaire(
        study=study, rater=request.user, which=which, answers=answers, crowd=crowd_state(study, request.user)),
        questions)


@login_required
@require_POST
def instructions_view(request: HttpRequest, slug: str) -> HttpResponse:
    study = rater_study(request, slug)
    questions = study.phases.get("instructions", {}).get("check", [])
    return _write(request, study, lambda answers: phase_instructions(study=study, rater=request.user,
                                                                     answers=answers), questions)
