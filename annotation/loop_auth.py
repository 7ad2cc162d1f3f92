"""The rating loop API's sign-in by session, with the user's row read in the loop's first statement.

Django's session sign-in reads the user by a statement of its own on every request, before the view
reads the study and the rater's membership by another. The loop's endpoints run hundreds of times a
second in a crowd study, and that statement (with its round trip through the pooler) was a fifth of a
request's work. Here the session's claim (the user's id, the backend that signed them in and the
session's hash of the password) is taken from the session as Django reads it, the user's row comes
with the study in one statement (annotation.access.read_user_and_study), and the claim is then
checked as django.contrib.auth.get_user checks it: the backend still listed, the account active, the
session hash equal to the password's (or to a fallback secret's, which renews it), else the session
is flushed and the request is not signed in. CSRF is enforced as DRF's SessionAuthentication does.

Only sessions signed in by annotation.auth_backend (every session this site makes) are taken this
way; any other goes through Django's own get_user. Until `signed_in_study` confirms it, the request's
user is a SessionClaim, which has no attributes of a user beyond being authenticated, so that code
reading it before the check fails loudly instead of trusting it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.http import Http404
from django.utils.crypto import constant_time_compare
from drf_spectacular.authentication import SessionScheme
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotAuthenticated

from annotation import auth_backend
from annotation.access import get_study_and_own_assignment, get_study_for_annotator, read_user_and_study


@dataclass(frozen=True)
class SessionClaim:
    """Who the session says is signed in, not yet checked against their row."""

    pk: object
    session_hash: str | None
    is_authenticated = True
    is_anonymous = False


class LoopSessionAuthentication(SessionAuthentication):
    """DRF's SessionAuthentication for the loop's views: the user is checked by signed_in_study."""

    def authenticate(self, request):
        session = request._request.session
        backend = session.get(BACKEND_SESSION_KEY)
        if backend != auth_backend.PATH or backend not in settings.AUTHENTICATION_BACKENDS:
            return super().authenticate(request)  # Django's own reading
        try:
            pk = get_user_model()._meta.pk.to_python(session[SESSION_KEY])
        except (KeyError, ValidationError):
            return None  # not signed in, as Django's get_user has it
        self.enforce_csrf(request)
        return SessionClaim(pk, session.get(HASH_SESSION_KEY)), None


def signed_in_study(request, slug: str, token=None):
    """The study (and with `token` the rater's own assignment) as annotation.access's
    get_study_for_annotator / get_study_and_own_assignment give them, for the request's signed-in
    user; a SessionClaim is confirmed on the way (else 403, not signed in) and replaced by the user."""
    claim = request.user
    if not isinstance(claim, SessionClaim):
        if token is None:
            return get_study_for_annotator(claim, slug)
        return get_study_and_own_assignment(claim, slug, token)
    user, study, assignment = read_user_and_study(claim.pk, slug, _token(token))
    if user is None or not _session_verified(request._request, claim, user):
        request.user = AnonymousUser()
        raise NotAuthenticated()
    request.user = user
    if study is None:
        raise Http404("No such study")
    if token is None:
        return study
    if assignment is None:
        raise Http404("No such assignment")
    return study, assignment


def confirm_claim(request) -> None:
    """For a request that reads no study (a method the view does not allow): the claim is checked on
    the user's row alone, so that a session that is not signed in is told so before anything else."""
    claim = request.user
    if not isinstance(claim, SessionClaim):
        return
    user = auth_backend.ModelBackend().get_user(claim.pk)
    if user is None or not _session_verified(request._request, claim, user):
        request.user = AnonymousUser()
        raise NotAuthenticated()
    request.user = user


def _token(token):
    if token is None:
        return None
    try:
        return uuid.UUID(str(token))
    except ValueError:
        return uuid.UUID(int=0)  # no assignment has it: the study is still named first, then the 404


def _session_verified(django_request, claim: SessionClaim, user) -> bool:
    """django.contrib.auth.get_user's checks of a session's user, on a row already read."""
    if not auth_backend.ModelBackend().user_can_authenticate(user):
        return False
    session = django_request.session
    current = user.get_session_auth_hash()
    if claim.session_hash and constant_time_compare(claim.session_hash, current):
        return True
    if claim.session_hash and any(constant_time_compare(claim.session_hash, fallback)
                                  for fallback in user.get_session_auth_fallback_hash()):
        session.cycle_key()  # signed with a secret being retired: renewed, as Django does
        session[HASH_SESSION_KEY] = current
        return True
    session.flush()
    return False


class LoopSessionScheme(SessionScheme):
    """The API schema documents it as the session cookie it is (drf-spectacular matches classes exactly and
    wants a name of its own for each class)."""

    target_class = LoopSessionAuthentication
    name = "participantCookieAuth"
