"""Crowd entry links: a panel's participant arrives, rates, and goes back with a completion code."""

from __future__ import annotations

from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.utils.translation import gettext as _

from annotation.auth_backend import PATH as AUTH_BACKEND
from annotation.services.crowd import (CrowdError, crowd_enter, crowd_entry_check, crowd_is_preview, crowd_return,
                                      crowd_state, mturk_submit_url)
from annotation.views.language import rater_study

SESSION_KEY = "crowd_studies"  # study ids this browser session came to through a crowd link
MTURK_KEY = "crowd_mturk_submit"  # study id -> where MTurk takes this worker's finished assignment


@require_http_methods(["GET", "POST"])
def crowd_entry(request: HttpRequest, token: str) -> HttpResponse:
    """Create or resume the participant of the URL's ids, sign them in, and open the workspace.

    Someone already signed in as another account (a researcher trying the link, an admin) is
    asked first: GET shows what continuing does, and only the POST of that page (same address,
    CSRF-checked) signs them out and enters; nothing is created before they confirm."""
    try:
        if crowd_is_preview(token=token, params=request.GET):
            return render(request, "annotation/crowd_message.html", {
                "title": _("Preview"), "message": _("Accept the HIT to begin: the task opens here once you have.")})
        if request.user.is_authenticated and request.method == "GET" and not crowd_entry_check(
                token=token, params=request.GET, user=request.user):
            return render(request, "annotation/crowd_confirm.html", {"account": request.user.get_username(),
                                                                     "query": request.GET.urlencode()})
        participant = crowd_enter(token=token, params=request.GET)
    except CrowdError as exc:
        return render(request, "annotation/crowd_message.html", {"title": _("This link cannot be used"),
                                                                 "message": exc.message, "field": exc.field},
                      status=404 if not exc.field else 400)
    study = participant.link.study
    if request.user.is_authenticated and request.user.pk != participant.user_id:
        logout(request)  # confirmed by the POST above
    login(request, participant.user, backend=AUTH_BACKEND)
    request.session[SESSION_KEY] = sorted(set(request.session.get(SESSION_KEY, [])) | {study.pk})
    if submit_to := mturk_submit_url(request.GET.get("turkSubmitTo", "")):
        request.session[MTURK_KEY] = {**request.session.get(MTURK_KEY, {}), str(study.pk): submit_to}
    if participant.deadline is not None:
        request.session.set_expiry(participant.deadline)  # the time limit ends the session too
    return redirect("workspace", slug=study.slug)


def crowd_context(request: HttpRequest, study) -> dict:
    """The crowd part of a workspace screen: nothing (one query fewer) for raters who came otherwise."""
    if study.pk not in request.session.get(SESSION_KEY, []):
        return {}
    state = crowd_state(study, request.user)
    if not state:
        return {}
    submit_to = request.session.get(MTURK_KEY, {}).get(str(study.pk))
    return {"crowd": state, "mturk_submit": submit_to} if submit_to else {"crowd": state}


@login_required
@require_POST
def crowd_return_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The participant gives the task back: their items go back to the pool now, and they are signed out."""
    study = rater_study(request, slug)
    state = crowd_state(study, request.user)
    if state is None:
        return render(request, "annotation/crowd_message.html", {"title": _("Nothing to return"),
                                                                 "message": _("You did not come through a crowd link.")},
                      status=400)
    crowd_return(participant=state.participant)
    logout(request)
    return render(request, "annotation/crowd_message.html", {
        "title": _("Task returned"), "message": _("Your items went back to the pool. You can close this page and "
                                                  "return the study on your panel's site too.")})
