"""Who may do what. Every view and API endpoint goes through these helpers.

Roles: site admins (is_staff) manage every study; annotators and researchers reach only
the studies they are members of, annotators to rate, researchers to read reports.
"""

from __future__ import annotations

import uuid

from django.core.exceptions import PermissionDenied
from django.db.models import F, Value
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.db import instance_from_row, prepared_cursor, select_columns
from annotation.models import (Assignment, CrowdLink, Item, Study, StudyMember, assignment_from_row,
                               assignment_item_columns)
from rubrics.models import RubricVersion

ANNOTATOR = StudyMember.Role.ANNOTATOR
RESEARCHER = StudyMember.Role.RESEARCHER


def is_admin(user) -> bool:
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def study_role(user, study: Study) -> str | None:
    """'admin', 'annotator', 'researcher' or None."""
    if not user.is_authenticated:
        return None
    if is_admin(user):
        return "admin"
    return StudyMember.objects.filter(study=study, user=user).values_list("role", flat=True).first()


def can_manage(user, study: Study) -> bool:
    """Site admins manage every study; a study's owner (its creator) manages it too."""
    return is_admin(user) or (user.is_authenticated and user.is_active and study.created_by_id == user.pk)


def get_study_for_manager(user, slug: str) -> Study:
    """A study the user may manage; 403 for anyone else who is signed in (the manage pages say so)."""
    study = get_object_or_404(Study.objects.select_related("rubric_version__rubric"), slug=slug)
    if not can_manage(user, study):
        raise PermissionDenied("Only site admins and the study's owner manage it.")
    return study


def get_study_for_admin(user, slug: str) -> Study:
    if not is_admin(user):
        raise Http404("No such study")
    return get_object_or_404(Study.objects.select_related("rubric_version__rubric"), slug=slug)


_ANNOTATOR_STUDY_SQL = f"""
    SELECT {select_columns(Study, "s")}, {select_columns(RubricVersion, "v")},
        EXISTS (SELECT 1 FROM {CrowdLink._meta.db_table} l WHERE l.study_id = s.id)
    FROM {Study._meta.db_table} s
    JOIN {StudyMember._meta.db_table} m ON m.study_id = s.id AND m.user_id = %s AND m.role = %s
        AND m.removed_at IS NULL  -- a removed rater's ratings stay, their access does not
    JOIN {RubricVersion._meta.db_table} v ON v.id = s.rubric_version_id
    WHERE s.slug = %s
"""


def get_study_for_annotator(user, slug: str) -> Study:
    """A study the user rates in, with its rubric version; 404 (not 403) so that slugs of other
    studies stay unknown. Every request of the rating loop starts here: one plain statement costs
    less CPU than the ORM compiling its join."""
    if not user.is_authenticated:
        raise Http404("No such study")
    with prepared_cursor() as cursor:
        cursor.execute(_ANNOTATOR_STUDY_SQL, [user.pk, ANNOTATOR, slug])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such study")
    return _study_from_row(row)


_STUDY_COLUMNS = len(Study._meta.concrete_fields) + len(RubricVersion._meta.concrete_fields)


def _study_from_row(row) -> Study:
    n = len(Study._meta.concrete_fields)
    study = instance_from_row(Study, row[:n])
    study.rubric_version = instance_from_row(RubricVersion, row[n:_STUDY_COLUMNS])
    # without a link nobody is a crowd participant: crowd_state asks nothing
    study.has_crowd_links = row[_STUDY_COLUMNS]
    return study


_ANNOTATOR_ASSIGNMENT_SQL = _ANNOTATOR_STUDY_SQL.replace(
    "\n    FROM ", f", {assignment_item_columns('a', 'i')}\n    FROM ", 1).replace("\n    WHERE s.slug = %s", f"""
    LEFT JOIN {Assignment._meta.db_table} a ON a.token = %s AND a.study_id = s.id AND a.rater_id = m.user_id
    LEFT JOIN {Item._meta.db_table} i ON i.id = a.item_id
    WHERE s.slug = %s""")


def get_study_and_own_assignment(user, slug: str, token) -> tuple[Study, Assignment]:
    """get_study_for_annotator, and one of the user's own assignments in that study with its item
    and outputs, in one statement (the rating loop asks both on every submit); another rater's
    assignment, or one of another study, is a 404 as an unknown token is."""
    try:
        token = uuid.UUID(str(token))
    except ValueError:
        get_study_for_annotator(user, slug)  # an unknown study is still named first
        raise Http404("No such assignment") from None
    if not user.is_authenticated:
        raise Http404("No such study")
    with prepared_cursor() as cursor:
        cursor.execute(_ANNOTATOR_ASSIGNMENT_SQL, [user.pk, ANNOTATOR, token, slug])
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such study")
    n = _STUDY_COLUMNS + 1
    if row[n] is None:  # the assignment's id: no row of this rater in this study has the token
        raise Http404("No such assignment")
    study = _study_from_row(row[:n])
    assignment = assignment_from_row(row[n:])
    assignment.study = study  # already loaded with its rubric version
    return study, assignment


def get_study_for_reader(user, slug: str) -> Study:
    """A study whose reports and datasets the user may read: admins and its researchers."""
    study = get_object_or_404(Study.objects.select_related("rubric_version__rubric"), slug=slug)
    if study_role(user, study) not in {"admin", RESEARCHER}:
        raise Http404("No such study")
    return study


def studies_for(user):
    """The studies a user sees on the home page, each annotated with the user's `role` in it."""
    studies = Study.objects.select_related("rubric_version__rubric")
    if is_admin(user):
        return studies.annotate(role=Value("admin"))
    # One row per membership (unique per study and user), so no DISTINCT is needed.
    return studies.filter(members__user=user, members__removed_at__isnull=True).annotate(role=F("members__role"))
