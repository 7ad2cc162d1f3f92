"""Invitation links: unguessable, expiring, single or multi use, revocable. The first visit creates an
annotator account (the visitor chooses a username and password) and adds it to the study."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Study, StudyChange, StudyInvitation, StudyMember

MAX_DAYS = 90


class InvitationError(ValueError):
    """`field` names what was wrong ('' when it is the invitation itself)."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}" if field else message)


def invitation_create(*, study: Study, user, days: int, max_uses: int | None) -> StudyInvitation:
    if not 1 <= days <= MAX_DAYS:
        raise InvitationError("days", f"between 1 and {MAX_DAYS} days")
    if max_uses is not None and max_uses < 1:
        raise InvitationError("max_uses", "at least 1, or empty for any number")
    invitation = StudyInvitation.objects.create(
        study=study, token=secrets.token_urlsafe(32), max_uses=max_uses, created_by=user,
        expires_at=timezone.now() + timedelta(days=days))
    uses = "single use" if max_uses == 1 else f"up to {max_uses} uses" if max_uses else "any number of uses"
    StudyChange.objects.create(study=study, user=user, field="invitation", old="",
                               new=f"link created, {uses}, expires {invitation.expires_at:%Y-%m-%d %H:%M}")
    return invitation


def invitation_revoke(*, study: Study, invitation_id, user) -> StudyInvitation:
    try:
        invitation = study.invitations.get(pk=invitation_id)
    except (StudyInvitation.DoesNotExist, ValueError, TypeError):
        raise InvitationError("invitation", "no such invitation in this study") from None
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        StudyChange.objects.create(study=study, user=user, field="invitation", old="active",
                                   new=f"link created {invitation.created_at:%Y-%m-%d %H:%M} revoked")
    return invitation


def invitation_problem(invitation: StudyInvitation) -> str | None:
    """Why the link cannot be used now, or None."""
    if invitation.revoked_at is not None:
        return "This invitation was revoked."
    if invitation.expires_at <= timezone.now():
        return "This invitation has expired."
    if invitation.max_uses is not None and invitation.uses >= invitation.max_uses:
        return "This invitation has been used already."
    if invitation.study.status == Study.Status.CLOSED:
        return "This study is closed."
    return None


def invitation_for_token(token: str) -> StudyInvitation | None:
    return StudyInvitation.objects.select_related("study").filter(token=token).first()


@transaction.atomic
def _take_use(token: str) -> StudyInvitation:
    invitation = StudyInvitation.objects.select_for_update().select_related("study").filter(token=token).first()
    if invitation is None:
        raise InvitationError("", "No such invitation.")
    if (problem := invitation_problem(invitation)) is not None:
        raise InvitationError("", problem)
    StudyInvitation.objects.filter(pk=invitation.pk).update(uses=F("uses") + 1)
    return invitation


def invitation_accept(*, token: str, username: str, password: str):
    """Create the account and its membership, counting one use; all or nothing. Returns the user."""
    username = username.strip()
    if not username:
        raise InvitationError("username", "choose a username")
    User = get_user_model()
    try:
        User.username_validator(username)
    except ValidationError as exc:
        raise InvitationError("username", " ".join(exc.messages)) from None
    try:
        validate_password(password, User(username=username))
    except ValidationError as exc:
        raise InvitationError("password", " ".join(exc.messages)) from None
    try:
        with transaction.atomic():
            invitation = _take_use(token)
            if User.objects.filter(username__iexact=username).exists():
                raise InvitationError("username", "this username is taken; choose another")
            user = User.objects.create_user(username=username, password=password)
            StudyMember.objects.create(study=invitation.study, user=user, role=invitation.role)
            StudyChange.objects.create(study=invitation.study, user=user, field="members", old="",
                                       new=f"{username} joined through an invitation link")
    except IntegrityError:  # the same username taken by a concurrent sign-up
        raise InvitationError("username", "this username is taken; choose another") from None
    return user


@transaction.atomic
def invitation_join(*, token: str, user) -> StudyMember:
    """A signed-in user follows a link: add them to the study, counting one use. A member stays as
    they are (no use counted); someone an admin removed cannot undo that with a link."""
    invitation = invitation_for_token(token)
    if invitation is None:
        raise InvitationError("", "No such invitation.")
    existing = StudyMember.objects.filter(study_id=invitation.study_id, user=user).first()
    if existing is not None and existing.removed_at is not None:
        raise InvitationError("", "You were removed from this study; ask its administrator.")
    if existing is not None:
        return existing
    _take_use(token)
    member = StudyMember.objects.create(study=invitation.study, user=user, role=invitation.role)
    StudyChange.objects.create(study=invitation.study, user=user, field="members", old="",
                               new=f"{user.username} joined through an invitation link")
    return member
