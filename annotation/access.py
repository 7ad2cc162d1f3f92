"""Who may do what. Every view and API endpoint goes through these helpers.

Roles: site admins (is_staff) manage every study; annotators and researchers reach only
the studies they are members of, annotators to rate, researchers to read reports.
"""

from __future__ import annotations

from django.db.models import F, Value
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.models import Assignment, Study, StudyMember

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


def get_study_for_admin(user, slug: str) -> Study:
    if not is_admin(user):
        raise Http404("No such study")
    return get_object_or_404(Study.objects.select_related("rubric_version__rubric"), slug=slug)


def get_study_for_annotator(user, slug: str) -> Study:
    """A study the user rates in; 404 (not 403) so that slugs of other studies stay unknown."""
    # One query: this runs on every request of the rating loop.
    return get_object_or_404(Study.objects.select_related("rubric_version"), slug=slug,
                             members__user=user, members__role=ANNOTATOR)


def get_own_assignment(user, study: Study, token) -> Assignment:
    """One of the user's own assignments in `study`, with its item and outputs; anyone else's is a 404."""
    try:
        assignment = Assignment.objects.select_related("item").get(study=study, rater=user, token=token)
    except Assignment.DoesNotExist:
        raise Http404("No such assignment") from None
    assignment.item.load_outputs()
    assignment.study = study  # already loaded with its rubric version
    return assignment


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
    return studies.filter(members__user=user).annotate(role=F("members__role"))
