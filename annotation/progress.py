"""Reads for a study's progress dashboard: totals, one row per rater (throughput, median time per
item, attention checks), and the items raters flagged. A handful of aggregate queries per refresh."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Aggregate, Count, FloatField, Q
from django.utils import timezone

from annotation.models import Assignment, Study, StudyMember, TrainingAttempt
from annotation.payments import rater_decisions
from annotation.selectors import StudyProgress, study_progress

SUBMITTED = Assignment.Status.SUBMITTED


class Median(Aggregate):
    """PostgreSQL's continuous median (percentile_cont), which Django does not ship."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


@dataclass
class Dashboard:
    totals: StudyProgress
    last_hour: int
    median_seconds: float | None
    checks: int
    checks_failed: int
    raters: list[dict]
    flags: list[dict]
    flags_total: int

    @property
    def checks_passed(self) -> int:
        return self.checks - self.checks_failed


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 1)


def study_dashboard(study: Study, *, flags_limit: int = 20) -> Dashboard:
    hour_ago = timezone.now() - timedelta(hours=1)
    submitted = Assignment.objects.filter(study=study, status=SUBMITTED)
    overall = submitted.aggregate(
        last_hour=Count("id", filter=Q(submitted_at__gte=hour_ago)),
        median_ms=Median("time_on_task_ms", filter=Q(is_attention_check=False)),
        checks=Count("id", filter=Q(is_attention_check=True, attention_passed__isnull=False, item__is_training=False)),
        checks_failed=Count("id", filter=Q(is_attention_check=True, attention_passed=False, item__is_training=False)),
    )
    per_rater = {
        row["rater"]: row
        for row in Assignment.objects.filter(study=study).values("rater").annotate(
            submitted=Count("id", filter=Q(status=SUBMITTED, is_attention_check=False)),
            active=Count("id", filter=Q(status=Assignment.Status.ACTIVE)),
            last_hour=Count("id", filter=Q(status=SUBMITTED, submitted_at__gte=hour_ago)),
            median_ms=Median("time_on_task_ms", filter=Q(status=SUBMITTED, is_attention_check=False)),
            checks=Count("id", filter=Q(status=SUBMITTED, is_attention_check=True, attention_passed__isnull=False,
                                        item__is_training=False)),
            checks_failed=Count("id", filter=Q(status=SUBMITTED, is_attention_check=True, attention_passed=False,
                                               item__is_training=False)),
            flagged=Count("id", filter=Q(status=SUBMITTED, ignored=True)),
        )
    }
    members = StudyMember.objects.filter(study=study, role=StudyMember.Role.ANNOTATOR).select_related("user")
    training = {a.rater_id: a for a in TrainingAttempt.objects.filter(study=study).order_by("rater_id", "number")}
    members = list(members.order_by("user__username"))
    decisions = rater_decisions(study, [m.user_id for m in members])
    raters = []
    for m in members:
        row = per_rater.get(m.user_id, {})
        raters.append({
            "username": m.user.username, "user_id": m.user_id, "paused": m.paused,
            "submitted": row.get("submitted", 0), "active": row.get("active", 0),
            "last_hour": row.get("last_hour", 0), "median_seconds": _seconds(row.get("median_ms")),
            "checks": row.get("checks", 0), "checks_failed": row.get("checks_failed", 0),
            "flagged": row.get("flagged", 0), "training": training.get(m.user_id),
            "decision": decisions.get(m.user_id),
        })
        raters[-1]["checks_passed"] = raters[-1]["checks"] - raters[-1]["checks_failed"]
    flagged = submitted.filter(ignored=True)
    flags = [
        {"item": a["item__external_id"], "rater": a["rater__username"], "reason": a["ignore_reason"],
         "at": a["submitted_at"]}
        for a in flagged.order_by("-submitted_at").values("item__external_id", "rater__username", "ignore_reason",
                                                          "submitted_at")[:flags_limit]
    ]
    return Dashboard(
        totals=study_progress(study), last_hour=overall["last_hour"], median_seconds=_seconds(overall["median_ms"]),
        checks=overall["checks"], checks_failed=overall["checks_failed"], raters=raters, flags=flags,
        flags_total=flagged.count(),
    )
