"""Crowd entry links: a panel's participant arrives, rates, and goes back with a completion code."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.auth_backend import PATH as AUTH_BACKEND
from annotation.services.crowd import (CrowdError, CrowdInUse, browser_key_new, crowd_enter, crowd_entry_check,
                                       crowd_hold, crowd_is_preview, crowd_return, crowd_state, mturk_submit_url)
from annotation.views.language import rater_study

SESSION_KEY = "crowd_studies"  # study ids this browser session came to through a crowd link
MTURK_KEY = "crowd_mturk_submit"  # study id -> where MTurk takes this worker's finished assignment
BROWSER_COOKIE = "concord_crowd"  # the browser's key: which participants it holds (services.crowd)


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
        browser_key = request.COOKIES.get(BROWSER_COOKIE) or browser_key_new()
        participant = crowd_enter(token=token, params=request.GET, browser_key=browser_key,
                                  session_key=request.session.session_key or "")
    except CrowdError as exc:
        in_use = isinstance(exc, CrowdInUse)
        return render(request, "annotation/crowd_message.html", {
            "title": _("This participant id is in use") if in_use else _("This link cannot be used"),
            "message": exc.message, "field": exc.field}, status=409 if in_use else 404 if not exc.field else 400)
    study = participant.link.study
    if request.user.is_authenticated and request.user.pk != participant.user_id:
        logout(request)  # confirmed by the POST above
    login(request, participant.user, backend=AUTH_BACKEND)
    crowd_hold(participant=participant, session=request.session)
    request.session[SESSION_KEY] = sorted(set(request.session.get(SESSION_KEY, [])) | {study.pk})
    if submit_to := mturk_submit_url(request.GET.get("turkSubmitTo", "")):
        request.session[MTURK_KEY] = {**request.session.get(MTURK_KEY, {}), str(study.pk): submit_to}
    # Shorter than staff sessions, and the time limit ends it too; the browser's key lets it come back by the link.
    ends = timezone.now() + timedelta(seconds=settings.CROWD_SESSION_SECONDS)
    request.session.set_expiry(min(ends, participant.deadline) if participant.deadline else ends)
    response = redirect("workspace", slug=study.slug)
    response.set_cookie(BROWSER_COOKIE, browser_key, max_age=int(timedelta(days=90).total_seconds()),
                        secure=settings.SESSION_COOKIE_SECURE, httponly=True, samesite="Lax")
    return response


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
