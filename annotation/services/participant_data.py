"""A participant's data rights: download everything they gave a study, erase it, and the retention
period after which crowd panels' ids are purged.

    participant_export(study=..., user_id=...) -> dict            # JSON-ready: ratings, times, training
    participant_csv_rows(export) -> (columns, rows)                # one row per rating
    participant_erase(study=..., user_id=..., mode="delete"|"pseudonymise", by=admin) -> ParticipantErasure
    participant_ids_purge(now=None) -> int                          # Celery beat, daily; idempotent

Erasure keeps the study consistent: the participant's open assignments go back to the pool; with
"delete" their submitted assignments (and ratings, training attempts, crowd entries, membership)
go and the items' slot counters are recounted, so those items are served to other raters again;
with "pseudonymise" everything moves to a new inactive account named by a random id, the crowd
entries lose their panel and session ids, and the ratings' updated_at is touched so that cached
reports and consensus are recomputed. A crowd account (no password, named after the panel id)
left with no study is deleted. Dataset releases are immutable: a ready release made while the
participant's data was in the study is not rewritten; the erasure record lists it so the admin
can publish a new version, and exports made afterwards leave the data out (or show the random id).
"""

from __future__ import annotations

import json
import logging
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.audit import Action, audit_record, audit_rename_person, replace_name
from annotation.models import (Assignment, AuditEntry, CrowdParticipant, DatasetRelease, ParticipantErasure,
                               PhaseRecord, Rating, Study, StudyChange, StudyMember, TrainingAttempt)
from annotation.services.assignments import recount_items, assignments_release
from annotation.services.crowd import crowd_username_after_purge

logger = logging.getLogger(__name__)

CSV_COLUMNS = ("item", "assignment_status", "created_at", "submitted_at", "time_on_task_ms", "is_attention_check",
               "attention_passed", "ignored", "ignore_reason", "comment", "response", "criterion", "value", "score",
               "reasoning", "rated_at", "updated_at")


class ParticipantError(ValueError):
    """`field` names what was wrong."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


def _member(study: Study, user_id, *, lock: bool = False) -> StudyMember:
    members = StudyMember.objects.select_related("user")
    try:
        return (members.select_for_update() if lock else members).get(study=study, user_id=int(user_id))
    except (StudyMember.DoesNotExist, ValueError, TypeError):
        raise ParticipantError("user", f"{user_id!r} is not a participant of this study") from None


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def questionnaire_answers(study: Study, user) -> list[dict]:
    """The participant's phase records (consent given or declined, questionnaire answers, the
    instructions' comprehension check), one dict per phase, oldest first."""
    return [{"phase": r.phase, "outcome": r.outcome, "answers": r.answers, "at": _iso(r.at)}
            for r in PhaseRecord.objects.filter(study=study, rater=user).order_by("at", "id")]


def participant_export(*, study: Study, user_id) -> dict:
    """Everything the participant gave this study, as plain JSON-ready data. Responses are named by
    their position in the item (never by system)."""
    member = _member(study, user_id)
    user = member.user
    assignments = list(Assignment.objects.filter(study=study, rater=user).select_related("item")
                       .order_by("created_at", "id"))
    ratings: dict[int, list[dict]] = {}
    for r in (Rating.objects.filter(assignment__in=assignments).select_related("output")
              .order_by("assignment_id", "output__position", "criterion")):
        ratings.setdefault(r.assignment_id, []).append({
            "response": r.output.position if r.output else None, "criterion": r.criterion, "value": r.value,
            "score": r.score, "reasoning": r.reasoning, "rated_at": _iso(r.created_at),
            "updated_at": _iso(r.updated_at)})
    crowd = CrowdParticipant.objects.filter(link__study=study, user=user).select_related("link")
    return {
        "study": study.slug,
        "participant": {"username": user.get_username(), "role": member.role, "status": member.status,
                        "added_at": _iso(member.added_at)},
        "crowd": [{"provider": p.link.provider, "participant_id": p.participant_id, "session_id": p.session_id,
                   "started_at": _iso(p.started_at), "deadline": _iso(p.deadline),
                   "finished_at": _iso(p.finished_at), "returned_at": _iso(p.returned_at)} for p in crowd],
        "training": [{"attempt": t.number, "items": t.n_items, "answered": t.n_answered, "correct": t.n_correct,
                      "passed": t.passed, "answers": t.answers, "started_at": _iso(t.started_at),
                      "finished_at": _iso(t.finished_at), "replaced_answers_time_on_task_ms": t.time_on_task_ms}
                     for t in TrainingAttempt.objects.filter(study=study, rater=user)],
        "questionnaires": questionnaire_answers(study, user),
        "assignments": [{
            "item": a.item.external_id, "status": a.status, "created_at": _iso(a.created_at),
            "submitted_at": _iso(a.submitted_at), "time_on_task_ms": a.time_on_task_ms,
            "is_attention_check": a.is_attention_check, "attention_passed": a.attention_passed,
            "ignored": a.ignored, "ignore_reason": a.ignore_reason, "comment": a.comment,
            "ratings": ratings.get(a.pk, [])} for a in assignments],
    }


def participant_csv_rows(export: dict) -> list[dict]:
    """One row per rating (an assignment without ratings gets one row with empty rating columns)."""
    rows = []
    for a in export["assignments"]:
        base = {k: a[k] for k in ("item", "created_at", "submitted_at", "time_on_task_ms", "is_attention_check",
                                  "attention_passed", "ignored", "ignore_reason", "comment")}
        base["assignment_status"] = a["status"]
        for r in a["ratings"] or [{}]:
            rows.append({**base, "response": r.get("response"), "criterion": r.get("criterion"),
                         "value": json.dumps(r["value"]) if "value" in r else None, "score": r.get("score"),
                         "reasoning": r.get("reasoning"), "rated_at": r.get("rated_at"),
                         "updated_at": r.get("updated_at")})
    return rows


def _rename_in_logs(study: Study, old: str, new: str) -> None:
    """The study's audit entries and change log name `new` wherever they named the user `old`, as a
    whole name only: erasing "ann" leaves "anna" in "added ann, anna" as it was."""
    audit_rename_person(study=study, old=old, new=new)
    changed = []
    for change in StudyChange.objects.filter(study=study).filter(
            Q(field__contains=old) | Q(old__contains=old) | Q(new__contains=old)):
        before = (change.field, change.old, change.new)
        change.field, change.old, change.new = (replace_name(t, old, new) for t in before)
        change.field = change.field[:80]
        if (change.field, change.old, change.new) != before:
            changed.append(change)
    StudyChange.objects.bulk_update(changed, ["field", "old", "new"])


@transaction.atomic
def participant_erase(*, study: Study, user_id, mode: str, by) -> ParticipantErasure:
    """Erase one participant's data from `study` (see the module's docstring); all or nothing."""
    if mode not in ParticipantErasure.Mode.values:
        raise ParticipantError("mode", f"one of {', '.join(ParticipantErasure.Mode.values)}")
    member = _member(study, user_id, lock=True)
    user, username = member.user, member.user.get_username()
    assignments_release(study=study, rater=user)
    owned = Assignment.objects.filter(study=study, rater=user)
    counts = {"assignments": owned.count(), "ratings": Rating.objects.filter(assignment__in=owned).count()}
    first = owned.filter(submitted_at__isnull=False).order_by("submitted_at").values_list("submitted_at", flat=True)
    releases = []
    if first:
        releases = sorted({r.version for r in DatasetRelease.objects.filter(
            study=study, status=DatasetRelease.Status.READY, created_at__gte=first[0])})
    pseudonym = f"erased-{secrets.token_hex(8)}"
    crowd = CrowdParticipant.objects.filter(link__study=study, user=user)
    crowd_account = not user.has_usable_password() and crowd.exists()
    if mode == ParticipantErasure.Mode.DELETE:
        item_ids = sorted(set(owned.filter(slot__isnull=False).values_list("item_id", flat=True)))
        owned.delete()  # cascades to the ratings
        if item_ids:
            with connection.cursor() as cursor:
                recount_items(cursor, item_ids)
        TrainingAttempt.objects.filter(study=study, rater=user).delete()
        PhaseRecord.objects.filter(study=study, rater=user).delete()
        crowd.delete()
        member.delete()
    else:
        stand_in = get_user_model()(username=pseudonym, is_active=False)
        stand_in.set_unusable_password()
        stand_in.save()
        Rating.objects.filter(assignment__in=owned).update(updated_at=timezone.now())  # new report fingerprint
        owned.update(rater=stand_in)
        TrainingAttempt.objects.filter(study=study, rater=user).update(rater=stand_in)
        PhaseRecord.objects.filter(study=study, rater=user).update(rater=stand_in)
        crowd.update(user=stand_in, participant_id=pseudonym, session_id="")
        StudyMember.objects.filter(pk=member.pk).update(user=stand_in, paused=True,
                                                        removed_at=member.removed_at or timezone.now())
    _rename_in_logs(study, username, pseudonym)
    # what they did in the study is shown under the random id (pseudonymise) or no one (delete)
    successor = stand_in if mode == ParticipantErasure.Mode.PSEUDONYMISE else None
    StudyChange.objects.filter(study=study, user=user).update(user=successor)
    AuditEntry.objects.filter(study=study, actor=user).update(actor=successor)
    if crowd_account and not StudyMember.objects.filter(user=user).exists():
        user.delete()  # a crowd account was named after the panel id, and now belongs to no study
    erasure = ParticipantErasure.objects.create(
        study=study, pseudonym=pseudonym, mode=mode, by=by, by_name=by.get_username() if by else "",
        releases=releases, **counts)
    audit_record(actor=by, action=Action.PARTICIPANT_ERASE, study=study, target=pseudonym,
                 detail={"mode": mode, **counts, "releases_kept": releases})
    return erasure


def participant_ids_purge(*, now=None) -> int:
    """Replace the panel and session ids of every crowd participant whose study's retention period
    has run out (counted from when they started) by a random id, and rename their account to match.
    Touches only participants not purged yet, so a second run changes nothing. Returns how many.
    One study's failure is logged with the study named and the purge goes on with the others
    (the next run tries it again)."""
    now = now or timezone.now()
    purged = 0
    for study in Study.objects.filter(retention_days__isnull=False).order_by("pk"):
        try:
            purged += study_ids_purge(study=study, now=now)
        except Exception:  # noqa: BLE001 (whatever it is, it must not keep the other studies' ids)
            logger.exception("retention purge: study %s (retention_days=%s) failed; the other studies go on",
                             study.slug, study.retention_days)
    return purged


def study_ids_purge(*, study: Study, now) -> int:
    """participant_ids_purge for one study: the number of participants purged."""
    due = (CrowdParticipant.objects.filter(link__study=study, ids_purged_at__isnull=True,
                                           started_at__lte=now - timedelta(days=study.retention_days))
           .select_related("user", "link"))
    n = 0
    for p in due.iterator():
        with transaction.atomic():
            new_id = f"purged-{secrets.token_hex(8)}"
            old_name = p.user.get_username()
            new_name = crowd_username_after_purge(old_name, provider=p.link.provider,
                                                  old_id=p.participant_id, new_id=new_id)
            if new_name is not None:
                p.user.username = new_name
                p.user.save(update_fields=["username"])
                _rename_in_logs(study, old_name, new_name)
            p.participant_id, p.session_id, p.ids_purged_at = new_id, "", now
            p.save(update_fields=["participant_id", "session_id", "ids_purged_at"])
            n += 1
    if n:
        audit_record(actor=None, action=Action.IDS_PURGE, study=study, target=f"{n} participants",
                     detail={"retention_days": study.retention_days, "participants": n})
    return n
