"""Writes for a study's members: add many at once (pasted names or a CSV), pause, resume, remove.

Pausing or removing a rater sends their open assignments back to the pool at once. Removal keeps
the membership row (marked `removed_at`) so that their ratings stay, attributable and marked.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

from annotation.audit import Action, audit_record
from annotation.models import Study, StudyChange, StudyMember
from config.limits import limit



class MembersError(ValueError):
    """Refused as a whole; `errors` is a list of (line, name, message), line None for pasted lists."""

    def __init__(self, errors: list[tuple[int | None, str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"line {ln}: {name}: {msg}" if ln else f"{name}: {msg}" for ln, name, msg in errors))


@dataclass(frozen=True)
class MemberRow:
    line: int | None  # line in the CSV; None for pasted names
    name: str  # username or email, as given
    email: str = ""
    role: str = ""  # empty: the form's role


def parse_pasted(text: str) -> list[MemberRow]:
    """Usernames or emails separated by commas, semicolons, spaces or newlines."""
    return [MemberRow(None, n) for n in re.split(r"[\s,;]+", text) if n]


def parse_csv(text: str) -> list[MemberRow]:
    """`username[,email][,role]` per line; a header line naming `username` is skipped."""
    rows, errors = [], []
    for line, cells in enumerate(csv.reader(io.StringIO(text.removeprefix("\ufeff"))), start=1):
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue
        if line == 1 and cells[0].lower() == "username":
            continue
        if len(cells) > 3:
            errors.append((line, cells[0], "expected username[,email][,role]"))
            continue
        username, email, role = (cells + ["", ""])[:3]
        if role and role not in StudyMember.Role.values:
            errors.append((line, username or email, f"role must be one of {', '.join(StudyMember.Role.values)}"))
            continue
        if not username and not email:
            errors.append((line, "", "give a username or an email"))
            continue
        rows.append(MemberRow(line, username or email, email if username else "", role))
    if errors:
        raise MembersError(errors)
    return rows


@transaction.atomic
def members_add(*, study: Study, rows: list[MemberRow], role: str, user=None) -> list[StudyMember]:
    """Add existing users found by username or email; all or nothing, naming every unknown one.

    A removed member added again is back, active; an existing member takes the new role."""
    if role not in StudyMember.Role.values:
        raise MembersError([(None, role, f"role must be one of {', '.join(StudyMember.Role.values)}")])
    if not rows:
        raise MembersError([(None, "", "give at least one username or email")])
    if len(rows) > limit("members.per_add"):
        raise MembersError([(None, "", f"members: at most {limit('members.per_add'):,} at once (this has {len(rows):,})")])
    names = {r.name.lower() for r in rows}
    given = [r.name for r in rows]
    emails = [n.lower() for n in given if "@" in n]
    users = list(get_user_model().objects.annotate(email_lower=Lower("email"))
                 .filter(Q(username__in=given) | Q(email_lower__in=emails)))
    by_name = {u.username: u for u in users}
    by_email: dict[str, list] = {}
    for u in users:
        if u.email and u.email.lower() in names:
            by_email.setdefault(u.email.lower(), []).append(u)
    errors, found = [], []
    for r in rows:
        if r.name in by_name:
            found.append((r, by_name[r.name]))
        elif len(by_email.get(r.name.lower(), [])) == 1:
            found.append((r, by_email[r.name.lower()][0]))
        elif by_email.get(r.name.lower()):
            errors.append((r.line, r.name, "this email belongs to several accounts; give the username"))
        else:
            errors.append((r.line, r.name, "no such user"))
    if errors:
        raise MembersError(errors)
    members = {}
    for r, u in found:
        member, _ = StudyMember.objects.update_or_create(
            study=study, user=u, defaults={"role": r.role or role, "removed_at": None, "paused": False})
        members[u.pk] = member
    names = [m.user.username for m in members.values()]
    StudyChange.objects.create(study=study, user=user, field="members", old="", new="added " + ", ".join(names))
    audit_record(actor=user, action=Action.MEMBER_CHANGE, study=study, target=", ".join(names)[:200],
                 detail={"added": names, "role": role})
    return list(members.values())


def _member(study: Study, user_id: int) -> StudyMember:
    from annotation.selectors import member_shown_name

    try:
        member = StudyMember.objects.select_for_update().select_related("user").get(study=study, user_id=user_id)
    except (StudyMember.DoesNotExist, ValueError, TypeError):
        raise MembersError([(None, str(user_id), "not a member of this study")]) from None
    member.shown_name = member_shown_name(member)  # what the page and the change log say: no panel id
    return member


def _set(study: Study, member: StudyMember, user, *, paused: bool, removed: bool) -> StudyMember:
    from annotation.services.assignments import assignments_release

    old = member.status
    member.paused = paused
    member.removed_at = (member.removed_at or timezone.now()) if removed else None
    member.save(update_fields=["paused", "removed_at"])
    released = assignments_release(study=study, rater=member.user) if paused else 0
    StudyChange.objects.create(study=study, user=user, field=f"member {member.shown_name}", old=old,
                               new=member.status + (f" ({released} open assignments released)" if released else ""))
    audit_record(actor=user, action=Action.MEMBER_CHANGE, study=study, target=member.user.username,
                 detail={"status": [old, member.status], "released": released})
    member.released = released
    return member


@transaction.atomic
def member_pause(*, study: Study, user_id: int, user=None) -> StudyMember:
    member = _member(study, user_id)
    if member.status != "active":
        raise MembersError([(None, member.shown_name, f"is {member.status}, not active")])
    return _set(study, member, user, paused=True, removed=False)


@transaction.atomic
def member_resume(*, study: Study, user_id: int, user=None) -> StudyMember:
    member = _member(study, user_id)
    if member.status == "active":
        raise MembersError([(None, member.shown_name, "is already active")])
    return _set(study, member, user, paused=False, removed=False)


@transaction.atomic
def member_remove(*, study: Study, user_id: int, user=None) -> StudyMember:
    member = _member(study, user_id)
    if member.status == "removed":
        raise MembersError([(None, member.shown_name, "is already removed")])
    return _set(study, member, user, paused=True, removed=True)
