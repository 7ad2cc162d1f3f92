"""Writes for studies: create, members, status."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.text import slugify

from annotation.models import Study, StudyMember
from rubrics.models import RubricVersion


class StudyError(ValueError):
    pass


def study_create(*, name: str, rubric_version: RubricVersion, user=None, slug: str = "", **options) -> Study:
    slug = slugify(slug or name)[:80]
    if not slug:
        raise StudyError("name: a study needs a name with letters or digits")
    if Study.objects.filter(slug=slug).exists():
        raise StudyError(f"slug: a study {slug!r} already exists")
    if options.get("raters_per_item", 3) < 1:
        raise StudyError("raters_per_item: must be at least 1")
    return Study.objects.create(name=name, slug=slug, rubric_version=rubric_version, created_by=user, **options)


_TRANSITIONS = {
    Study.Status.DRAFT: {Study.Status.OPEN},
    Study.Status.OPEN: {Study.Status.CLOSED},
    Study.Status.CLOSED: {Study.Status.OPEN},
}


def study_set_status(*, study: Study, status: str) -> Study:
    if status not in _TRANSITIONS.get(study.status, set()):
        raise StudyError(f"status: a {study.status} study cannot become {status}")
    if status == Study.Status.OPEN and not study.items.exists():
        raise StudyError("status: upload items before opening the study")
    study.status = status
    study.save(update_fields=["status"])
    return study


@transaction.atomic
def study_members_add(*, study: Study, usernames: list[str], role: str) -> list[StudyMember]:
    """Add existing users by username; refuse the whole list if one is unknown."""
    if role not in StudyMember.Role.values:
        raise StudyError(f"role: must be one of {StudyMember.Role.values}")
    names = [n.strip() for n in usernames if n.strip()]
    users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
    missing = [n for n in names if n not in users]
    if missing:
        raise StudyError(f"usernames: no such user(s): {', '.join(missing)}")
    members = []
    for name in names:
        member, _ = StudyMember.objects.update_or_create(study=study, user=users[name], defaults={"role": role})
        members.append(member)
    return members
