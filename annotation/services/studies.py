"""Writes for studies: create, status (lifecycle), settings with their change log, members (by name).

Lifecycle: draft → open ⇄ paused, open/paused → closed → open again (reopened). Leaving "open"
releases every assignment in progress at once (a submit needs an open study, so they could not be
finished anyway); their drafts stay on the rows and come back if the same rater gets the item again.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.text import slugify

from annotation.audit import Action, audit_record
from annotation.models import Assignment, Item, Rating, Study, StudyChange, StudyMember
from annotation.services.members import MemberRow, MembersError, members_add
from annotation.services.sampling_policy import PolicyError, policy_clean
from annotation.traces.sampling import SamplingRuleError, rule_clean
from rubrics.models import RubricVersion
from config.limits import clip, limit, text_problem


class StudyError(ValueError):
    pass


def policy_changes(raw, rubric: dict) -> dict:
    """The cleaned sampling policy, with the raters per item adaptive redundancy implies (its max:
    the engine's hard cap per item)."""
    try:
        policy = policy_clean(raw, rubric=rubric)
    except PolicyError as exc:
        raise StudyError(str(exc).replace("sampling_policy.", "sampling_policy: ", 1)) from None
    if policy.get("name") == "adaptive_redundancy":
        return {"sampling_policy": policy, "raters_per_item": policy["max_raters"]}
    return {"sampling_policy": policy}


def trace_sampling_clean(raw) -> dict:
    try:
        return rule_clean(raw)
    except SamplingRuleError as exc:
        raise StudyError(str(exc).replace("trace_sampling.", "trace_sampling: ", 1)) from None


def study_create(*, name: str, rubric_version: RubricVersion, user=None, slug: str = "", **options) -> Study:
    slug = slugify(slug or name)[:80]
    if not slug:
        raise StudyError("name: a study needs a name with letters or digits")
    if Study.objects.filter(slug=slug).exists():
        raise StudyError(f"slug: a study {slug!r} already exists")
    if "sampling_policy" in options:
        options = {**options, **policy_changes(options["sampling_policy"], rubric_version.definition)}
    if "trace_sampling" in options:
        options = {**options, "trace_sampling": trace_sampling_clean(options["trace_sampling"])}
    if options.get("raters_per_item", 3) < 1:
        raise StudyError("raters_per_item: must be at least 1")
    if problem := text_problem("study.instructions", options.get("instructions") or ""):
        raise StudyError(problem)
    return Study.objects.create(name=name, slug=slug, rubric_version=rubric_version, created_by=user, **options)


# ---------------------------------------------------------------- lifecycle

S = Study.Status
_TRANSITIONS = {
    S.DRAFT: {S.OPEN},
    S.OPEN: {S.PAUSED, S.CLOSED},
    S.PAUSED: {S.OPEN, S.CLOSED},
    S.CLOSED: {S.OPEN},
}


@dataclass(frozen=True)
class Transition:
    """One lifecycle button: where it leads, its label, and what it will do, said before the click."""

    status: str
    label: str
    consequence: str
    danger: bool = False


def study_transitions(study: Study) -> list[Transition]:
    """The status changes open to `study` now, each with its consequences in numbers."""
    active = Assignment.objects.filter(study=study, status=Assignment.Status.ACTIVE).count()
    held = f"{active} open assignment{'s' if active != 1 else ''} {'are' if active != 1 else 'is'} released"
    out = []
    for status in sorted(_TRANSITIONS.get(study.status, set()), key=list(S.values).index):
        if status == S.OPEN and study.status == S.DRAFT:
            n = study.items.count()
            if not n:
                continue  # study_set_status refuses it; the page says to upload items first
            out.append(Transition(status, "Open study", f"Raters can start on its {n} items; "
                                  "invitations and member lists take effect."))
        elif status == S.OPEN and study.status == S.PAUSED:
            out.append(Transition(status, "Resume study", "Raters get new items again."))
        elif status == S.OPEN:
            out.append(Transition(status, "Reopen study",
                                  "Raters get new items again; ratings already given are kept."))
        elif status == S.PAUSED:
            out.append(Transition(status, "Pause study", f"Pausing stops new assignments; {held} "
                                  "(drafts are kept). Resume at any time.", danger=True))
        elif status == S.CLOSED:
            out.append(Transition(status, "Close study", f"Closing stops new assignments; {held}. "
                                  "Ratings already given are kept; the study can be reopened.", danger=True))
    return out


def _lock(study: Study, fields: list[str]) -> None:
    """Lock the study's row and reread `fields` into the caller's instance, so that two admins'
    changes are applied one after the other and each logs the true old value."""
    Study.objects.select_for_update().filter(pk=study.pk).values_list("pk").get()
    study.refresh_from_db(fields=fields)


@transaction.atomic
def study_set_status(*, study: Study, status: str, user=None) -> Study:
    from annotation.services.assignments import assignments_release

    _lock(study, ["status"])
    if status not in _TRANSITIONS.get(study.status, set()):
        raise StudyError(f"status: a {study.status} study cannot become {status}")
    if status == S.OPEN and not study.items.exists():
        raise StudyError("status: upload items before opening the study")
    old = study.status
    study.status = status
    study.save(update_fields=["status"])
    if old == S.OPEN:
        assignments_release(study=study)
    StudyChange.objects.create(study=study, user=user, field="status", old=old, new=status)
    audit_record(actor=user, action=Action.SETTING_CHANGE, study=study, target="status",
                 detail={"status": [old, status]})
    return study


# ---------------------------------------------------------------- settings

# Settings an admin may change after creation, with a word on what a change does to ratings
# already given (None: nothing). A change of these needs confirming once ratings exist.
EDITABLE = {
    "name": None,
    "instructions": "raters who already rated saw the earlier instructions",
    "raters_per_item": "items already rated keep the ratings they have; the target per item changes",
    "assignment_expiry_minutes": None,
    "randomize_items": None,
    "randomize_outputs": "items already rated were shown in the earlier response order",
    "counterbalance": "items already rated were shown in the earlier response order",
    "attention_check_rate": "attention results so far were collected under the earlier rate",
    "attention_fail_pause": "raters already over the new limit are not paused retroactively",
    "training_pass_mark": None,  # training results keep the mark they were judged by
    "deadline": None,
    "retention_days": None,  # annotation.services.participant_data.participant_ids_purge
    "language": None,
    # annotation.services.sampling_policy; adaptive redundancy sets raters_per_item to its max_raters
    "sampling_policy": "items already rated keep their ratings; new assignments follow the new design",
    # annotation.traces.sampling: each admitted trace keeps the inclusion probability it came in with
    "trace_sampling": None,
}
# Ten years: past it a retention period is a typo, and a billion days overflowed the purge's date arithmetic.
RETENTION_DAYS_MAX = 3650


class NeedsConfirmation(StudyError):
    """The change touches ratings already given; `consequences` lists (field, what it does)."""

    def __init__(self, consequences: list[tuple[str, str]], ratings: int):
        self.consequences, self.ratings = consequences, ratings
        super().__init__("confirm: " + "; ".join(f"{f}: {c}" for f, c in consequences))


def _shown(value) -> str:
    if value is None or value == "":
        return "—"
    if hasattr(value, "isoformat"):
        return value.isoformat(timespec="minutes")
    return str(value)


@transaction.atomic
def study_settings_update(*, study: Study, user, changes: dict, confirmed: bool = False) -> list[StudyChange]:
    """Apply the changed settings, log each (who, when, field, old → new); all or nothing.

    Raises NeedsConfirmation when a change affects ratings already given and `confirmed` is false."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise StudyError(f"{unknown[0]}: not a setting that can be changed here")
    _lock(study, list(EDITABLE))
    if "sampling_policy" in changes:
        changes = {**changes, **policy_changes(changes["sampling_policy"], study.rubric)}
    if "trace_sampling" in changes:
        changes = {**changes, "trace_sampling": trace_sampling_clean(changes["trace_sampling"])}
    changed = {f: v for f, v in changes.items() if getattr(study, f) != v}
    if not changed:
        return []
    if changed.get("raters_per_item", 1) < 1:
        raise StudyError("raters_per_item: must be at least 1")
    if "name" in changed and not str(changed["name"]).strip():
        raise StudyError("name: a study needs a name")
    if problem := text_problem("study.instructions", changed.get("instructions") or ""):
        raise StudyError(problem)
    if changed.get("retention_days") is not None and not 0 <= changed["retention_days"] <= RETENTION_DAYS_MAX:
        raise StudyError(f"retention_days: from 0 to {RETENTION_DAYS_MAX} days (ten years), or empty to keep the ids")
    rated = Rating.objects.filter(assignment__study=study).count()
    consequences = [(f, EDITABLE[f]) for f in changed if EDITABLE[f]]
    if rated and consequences and not confirmed:
        raise NeedsConfirmation(consequences, rated)
    log = [StudyChange(study=study, user=user, field=f, old=clip("study_change.value", _shown(getattr(study, f))),
                       new=clip("study_change.value", _shown(v)))
           for f, v in changed.items()]
    for f, v in changed.items():
        setattr(study, f, v)
    study.full_clean(exclude=["rubric_version", "created_by", "slug"])
    study.save(update_fields=list(changed))
    if "sampling_policy" in changed:
        # what a policy decided per item (adaptive redundancy's wants, active inference's draws) belongs to it: a
        # new one starts from its own default; ratings keep the probability they were drawn with
        Item.objects.filter(study=study).update(slots_wanted=None, sampling_probability=None)
    audit_record(actor=user, action=Action.SETTING_CHANGE, study=study, target=", ".join(c.field for c in log),
                 detail={c.field: [c.old, c.new] for c in log})
    return StudyChange.objects.bulk_create(log)


# ---------------------------------------------------------------- members by name (API and scripts)


@transaction.atomic
def study_members_add(*, study: Study, usernames: list[str], role: str, user=None) -> list[StudyMember]:
    """The API's add by username: the page's service (members_add), so that a removed or paused member
    added again is active again whichever way they were added; refuses the whole list if one is unknown."""
    rows = [MemberRow(None, n.strip()) for n in usernames if n.strip()]
    try:
        return members_add(study=study, rows=rows, role=role, user=user)
    except MembersError as exc:
        raise StudyError(f"usernames: {exc}") from None
