"""Reads for studies: progress per study, per rater and per item, in a few aggregate queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from annotation.models import Assignment, CrowdParticipant, Item, Study, StudyMember
from annotation.services.sampling_policy import wanted_expression


@dataclass(frozen=True)
class StudyProgress:
    items: int
    slots: int
    submitted: int
    active: int
    items_complete: int

    @property
    def percent(self) -> float:
        return 100.0 * self.submitted / self.slots if self.slots else 0.0


def study_progress(study: Study) -> StudyProgress:
    items = study.items.filter(is_attention_check=False)
    n_items = items.count()
    counts = Assignment.objects.filter(study=study, item__is_attention_check=False).aggregate(
        submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        active=Count("id", filter=Q(status=Assignment.Status.ACTIVE)),
    )
    # under adaptive redundancy an item wants as many raters as its posterior asks for (at least the minimum)
    wanted = wanted_expression(study)
    complete = (
        items.annotate(done=Count("assignments", filter=Q(assignments__status=Assignment.Status.SUBMITTED)))
        .filter(done__gte=wanted)
        .count()
    )
    slots = (items.aggregate(n=Sum(wanted))["n"] or 0) if study.sampling_policy else n_items * study.raters_per_item
    return StudyProgress(n_items, slots, counts["submitted"], counts["active"], complete)


def rater_progress(study: Study) -> list[dict]:
    """One row per annotator: submitted and in-progress counts, attention checks passed/failed."""
    members = StudyMember.objects.filter(study=study, role=StudyMember.Role.ANNOTATOR).select_related("user")
    counts = {
        row["rater"]: row
        for row in Assignment.objects.filter(study=study).values("rater").annotate(
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            active=Count("id", filter=Q(status=Assignment.Status.ACTIVE)),
            checks=Count("id", filter=Q(status=Assignment.Status.SUBMITTED, is_attention_check=True)),
            checks_failed=Count("id", filter=Q(status=Assignment.Status.SUBMITTED, is_attention_check=True,
                                               attention_passed=False)),
        )
    }
    fields = ("submitted", "active", "checks", "checks_failed")
    return [
        {"user": m.user, "paused": m.paused, **{f: counts.get(m.user_id, {}).get(f, 0) for f in fields}}
        for m in members
    ]


def item_progress(study: Study, limit: int = 200) -> list[dict]:
    return list(
        Item.objects.filter(study=study)
        .annotate(submitted=Count("assignments", filter=Q(assignments__status=Assignment.Status.SUBMITTED),
                                  distinct=True),
                  n_outputs=Count("outputs", distinct=True))
        .values("external_id", "submitted", "n_outputs", "is_attention_check")
        .order_by("id")[:limit]
    )


def crowd_member_name(member: StudyMember, provider: str) -> str:
    return f"crowd participant {member.pk} ({provider})"


def member_shown_name(member: StudyMember) -> str:
    """The member as the manage page names them: a crowd account by number, never its panel id."""
    provider = (CrowdParticipant.objects.filter(link__study_id=member.study_id, user_id=member.user_id)
                .values_list("link__provider", flat=True).first())
    return crowd_member_name(member, provider) if provider else member.user.username


def study_members(study: Study) -> list[StudyMember]:
    """Every member (removed ones last), each with `submitted` and `active` assignment counts and the name
    the manage page shows (`shown_name`, `key`)."""
    counts = {
        row["rater"]: row
        for row in Assignment.objects.filter(study=study).values("rater").annotate(
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            active=Count("id", filter=Q(status=Assignment.Status.ACTIVE)),
        )
    }
    members = list(StudyMember.objects.filter(study=study).select_related("user")
                   .order_by(F("removed_at").asc(nulls_first=True), "role", "user__username"))
    # A crowd account is named after its panel id, which only the audited participants' pages show: here it is
    # a number and its panel (config/routes.py: the page serves names, not personal data).
    crowd = dict(CrowdParticipant.objects.filter(link__study=study).values_list("user_id", "link__provider"))
    for m in members:
        m.submitted = counts.get(m.user_id, {}).get("submitted", 0)
        m.active = counts.get(m.user_id, {}).get("active", 0)
        m.is_crowd = m.user_id in crowd
        m.shown_name = crowd_member_name(m, crowd[m.user_id]) if m.is_crowd else m.user.username
        m.key = f"crowd-{m.pk}" if m.is_crowd else m.user.username
    return members


@dataclass(frozen=True)
class SetupStep:
    key: str  # the Manage page section that does it: upload, members, lifecycle
    label: str
    done: bool
    detail: str


def study_setup_steps(study: Study) -> list[SetupStep]:
    """A draft study's way to its first rating, in order: items, raters, open; each done or not."""
    n_items = study.items.count()
    raters = StudyMember.objects.filter(study=study, role=StudyMember.Role.ANNOTATOR, removed_at__isnull=True).count()
    now = timezone.now()
    links = (study.invitations.filter(revoked_at__isnull=True, expires_at__gt=now).count()
             + study.crowd_links.filter(revoked_at__isnull=True, expires_at__gt=now).count())
    is_open = study.status != Study.Status.DRAFT
    return [
        SetupStep("upload", "Upload the items", n_items > 0,
                  f"{n_items} item{'s' if n_items != 1 else ''} uploaded" if n_items else "A CSV or JSONL file"),
        SetupStep("members", "Add raters", bool(raters or links),
                  f"{raters} rater{'s' if raters != 1 else ''}, {links} active link{'s' if links != 1 else ''}"
                  if raters or links else "Add members, or create an invitation or crowd link"),
        SetupStep("lifecycle", "Open the study", is_open,
                  "Open" if is_open else "Raters can start once it is open" if n_items
                  else "Possible once it has items"),
    ]
