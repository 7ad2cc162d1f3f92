"""Who may do what with a study: the one access model. Every view, API endpoint, download, htmx
fragment and list goes through it (config/routes.py names each route's rule; docs/security.md).

What a user may do with a study follows from, in this order:
- the account: signed out or deactivated (is_active false), nothing;
- site admins (is_staff) read, manage and see participants' data of every study; they rate only
  where they are annotators;
- the study's owner (its creator) reads and manages that study; participants' personal data (panel
  ids with payments, questionnaire answers, one person's data, erasure) stays with site admins;
- membership, with its lifecycle: invited (a link, no membership row yet: nothing), active, paused
  (still reaches the study; a paused rater gets no new work: annotation.services.assignments),
  removed (`removed_at`: nothing; the row stays so that their ratings stay attributable) and
  re-added (members_add clears `removed_at`: active again). A researcher reads the study; an
  annotator rates in it.

Refusals are 404 (a study's slug stays unknown to those who may not read it), except the manage
pages, which tell a signed-in user 403.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation.db import instance_from_row, prepared_cursor, select_columns
from annotation.models import (Assignment, CrowdLink, CrowdParticipant, Item, Study, StudyMember,
                               assignment_from_row, assignment_item_columns)
from rubrics.models import RubricVersion

ANNOTATOR = StudyMember.Role.ANNOTATOR
RESEARCHER = StudyMember.Role.RESEARCHER


class Can(enum.StrEnum):
    READ = "read"  # reports, progress, datasets, exports, releases, judge runs
    RATE = "rate"  # the workspace and its API (phases, training)
    MANAGE = "manage"  # settings, members, items, links, phases
    PARTICIPANTS = "participants"  # participants' personal data: payments, answers, one person's data, erasure


EVERYTHING_BUT_RATING = frozenset({Can.READ, Can.MANAGE, Can.PARTICIPANTS})
OWNER = frozenset({Can.READ, Can.MANAGE})


@dataclass(frozen=True)
class StudyAccess:
    """What one user may do with one study, and why (`role`)."""

    role: str | None  # 'admin', 'owner', 'researcher', 'annotator' or None
    member_status: str | None  # 'active', 'paused', 'removed', or None (not a member)
    capabilities: frozenset[Can]

    def __contains__(self, capability: Can) -> bool:
        return capability in self.capabilities


NO_ACCESS = StudyAccess(None, None, frozenset())


def is_signed_in(user) -> bool:
    """Signed in with an account that is still active (Django's backends already refuse a
    deactivated one; checked again here so that the rule does not depend on it)."""
    return bool(user is not None and user.is_authenticated and user.is_active)


def is_admin(user) -> bool:
    return is_signed_in(user) and bool(user.is_staff)


def _capabilities_of_member(role: str | None, status: str | None) -> frozenset[Can]:
    if role is None or status in (None, "removed"):
        return frozenset()
    return frozenset({Can.READ}) if role == RESEARCHER else frozenset({Can.RATE})


def study_access(user, study: Study) -> StudyAccess:
    """The one rule: what `user` may do with `study` (see the module's docstring)."""
    if not is_signed_in(user):
        return NO_ACCESS
    member = StudyMember.objects.filter(study=study, user=user).only("role", "paused", "removed_at").first()
    role, status = (member.role, member.status) if member else (None, None)
    capabilities = _capabilities_of_member(role, status)
    if is_admin(user):
        return StudyAccess("admin", status, capabilities | EVERYTHING_BUT_RATING)
    if study.created_by_id is not None and study.created_by_id == user.pk:
        return StudyAccess("owner", status, capabilities | OWNER)
    return StudyAccess(role if capabilities else None, status, capabilities)


def can(user, study: Study, capability: Can) -> bool:
    return capability in study_access(user, study)


def studies_where(user, capability: Can) -> QuerySet[Study]:
    """The studies on which `user` has `capability`: the same rule as study_access, as a filter
    (for lists: the API's studies, judge runs, rubrics). One row per study, no DISTINCT."""
    studies = Study.objects.all()
    if not is_signed_in(user):
        return studies.none()
    if capability != Can.RATE and is_admin(user):
        return studies
    if capability == Can.PARTICIPANTS:
        return studies.none()
    if capability == Can.MANAGE:
        return studies.filter(created_by=user)
    member = Exists(StudyMember.objects.filter(study=OuterRef("pk"), user=user, removed_at__isnull=True,
                                               role=RESEARCHER if capability == Can.READ else ANNOTATOR))
    return studies.filter(member | Q(created_by=user)) if capability == Can.READ else studies.filter(member)


def get_study_for(user, slug: str, capability: Can) -> Study:
    """The study named by `slug` if `user` has `capability` on it; else 404, or 403 for a
    signed-in user on the manage pages (which say why)."""
    study = get_object_or_404(Study.objects.select_related("rubric_version__rubric"), slug=slug)
    if capability not in study_access(user, study):
        if capability == Can.MANAGE and is_signed_in(user):
            raise PermissionDenied("Only site admins and the study's owner manage it.")
        raise Http404("No such study")
    return study


def is_crowd_participant(user) -> bool:
    """An account made by a crowd link (a panel id): it rates, and reaches nothing else."""
    return is_signed_in(user) and CrowdParticipant.objects.filter(user=user).exists()


def is_team_account(user) -> bool:
    """Every signed-in account but crowd participants, who rate and reach nothing else: they read no
    documentation site (its pages describe studies, panels and administration) and hold no API token
    (their browser is their credential)."""
    return is_signed_in(user) and not is_crowd_participant(user)


may_read_docs = may_hold_api_token = is_team_account


def may_read_api_docs(user) -> bool:
    """The API's schema and docs: signed-in staff and study members (or owners), not crowd participants."""
    if is_admin(user):
        return True
    if not is_signed_in(user) or is_crowd_participant(user):
        return False
    return (StudyMember.objects.filter(user=user, removed_at__isnull=True).exists()
            or Study.objects.filter(created_by=user).exists())


# ---------------------------------------------------------------- the rating loop's fast path

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
    """A study the user rates in (Can.RATE: an annotator, active or paused, not removed), with its
    rubric version; 404 (not 403) so that slugs of other studies stay unknown. Every request of the rating loop starts here: one plain statement costs
    less CPU than the ORM compiling its join."""
    if not is_signed_in(user):
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
    if not is_signed_in(user):
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


# ---------------------------------------------------------------- the same, led by the session's user row

def _led_by_user(sql: str) -> str:
    """`sql` (one of the two above) as a LATERAL subquery under the user's row: one statement reads the
    signed-in user and what they may rate, instead of one for each (annotation.loop_auth). The user's
    row comes back whether or not the study does, so that signing in and access stay apart."""
    User = get_user_model()
    inner = sql.replace("m.user_id = %s", "m.user_id = u.id", 1)
    return (f"SELECT {select_columns(User, 'u')}, q.* FROM {User._meta.db_table} u"
            f" LEFT JOIN LATERAL ({inner}) q ON true WHERE u.id = %s")


_USER_STUDY_SQL = _led_by_user(_ANNOTATOR_STUDY_SQL)
_USER_ASSIGNMENT_SQL = _led_by_user(_ANNOTATOR_ASSIGNMENT_SQL)


def read_user_and_study(user_pk, slug: str, token=None):
    """(user or None, study or None, assignment or None) in one statement: the user with primary key
    `user_pk` as stored (not yet checked against a session: annotation.loop_auth does that), and what
    get_study_for_annotator (no `token`) or get_study_and_own_assignment would return for them, None
    where those raise 404."""
    User = get_user_model()
    with prepared_cursor() as cursor:
        if token is None:
            cursor.execute(_USER_STUDY_SQL, [ANNOTATOR, slug, user_pk])
        else:
            cursor.execute(_USER_ASSIGNMENT_SQL, [ANNOTATOR, token, slug, user_pk])
        row = cursor.fetchone()
    if row is None:
        return None, None, None
    nu = len(User._meta.concrete_fields)
    user, row = instance_from_row(User, row[:nu]), row[nu:]
    if row[0] is None:  # the study's id: no study of this slug that the user rates in
        return user, None, None
    n = _STUDY_COLUMNS + 1
    study = _study_from_row(row[:n])
    if token is None or row[n] is None:
        return user, study, None
    assignment = assignment_from_row(row[n:])
    assignment.study = study
    return user, study, assignment


# ---------------------------------------------------------------- the names the views use


def study_role(user, study: Study) -> str | None:
    """'admin', 'owner', 'annotator', 'researcher' or None (a removed member is None)."""
    return study_access(user, study).role


def can_manage(user, study: Study) -> bool:
    return can(user, study, Can.MANAGE)


def get_study_for_manager(user, slug: str) -> Study:
    """A study the user may manage; 403 for anyone else who is signed in (the manage pages say so)."""
    return get_study_for(user, slug, Can.MANAGE)


def get_study_for_reader(user, slug: str) -> Study:
    """A study whose reports and datasets the user may read: admins, its owner, its researchers."""
    return get_study_for(user, slug, Can.READ)


def get_study_for_participants(user, slug: str) -> Study:
    """A study whose participants' personal data the user may see (site admins); else 404."""
    return get_study_for(user, slug, Can.PARTICIPANTS)


def get_study_for_admin(user, slug: str) -> Study:
    """Site admins only (what spends money or acts site-wide, such as judge runs); else 404."""
    if not is_admin(user):
        raise Http404("No such study")
    return get_object_or_404(Study.objects.select_related("rubric_version__rubric"), slug=slug)


def studies_for(user):
    """The studies a user sees on the home page, each annotated with the user's `role` in it: their
    role as a member (not removed), else 'owner' for a study they created."""
    studies = Study.objects.select_related("rubric_version__rubric")
    if is_admin(user):
        return studies.annotate(role=Value("admin"))
    if not is_signed_in(user):
        return studies.annotate(role=Value("")).none()
    member_role = Subquery(StudyMember.objects.filter(study=OuterRef("pk"), user=user, removed_at__isnull=True)
                           .values("role")[:1])
    return (studies.annotate(role=Coalesce(member_role, Value("owner")))
            .filter(Q(created_by=user) | ~Q(role="owner")))
