"""One state machine for a participant's way through a study, used by the workspace page and by
`POST /api/studies/<slug>/rate/next/` alike:

    closed / paused -> consent -> questionnaire (pre) -> instructions -> training / training_failed
        -> rate -> questionnaire (post) -> done;   screened_out: consent declined, or training failed twice

Each phase is optional (Study.phases, annotation.questionnaires; training when the study has a pass
mark and training items). Every write checks that the participant stands in that phase, so no
call out of order reaches a later one:

    phase_state(study=..., rater=..., crowd=...) -> PhaseState   # where they are; assigns the next item
    phase_require(study=..., rater=..., assignment=...)          # PhaseOrderError unless it may be answered
    phase_consent(study=..., rater=..., agree=bool)
    phase_questionnaire(study=..., rater=..., which="pre"|"post", answers={...})   # AnswersError
    phase_instructions(study=..., rater=..., answers={...})       # AnswersError (wrong check answers)
    study_close_if_past_deadline(study=...) -> bool
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Assignment, PhaseRecord, Study, StudyChange
from annotation.questionnaires import AnswersError, answers_clean, check_errors
from annotation.services.assignments import RaterPaused, assignment_next
from annotation.services.crowd import CrowdState, crowd_finish
from annotation.services.training import MAX_ATTEMPTS, TrainingState, training_state
from config.limits import text_problem

STATES = ("consent", "questionnaire", "instructions", "training", "training_failed", "rate", "screened_out",
          "done", "paused", "closed")
QUESTIONNAIRE_KEYS = {"pre": "pre_questionnaire", "post": "post_questionnaire"}
Phase = PhaseRecord.Phase


class PhaseOrderError(Exception):
    """The call answers a phase the participant is not in; `state` is where they are."""

    def __init__(self, state: str, message: str):
        self.state = state
        super().__init__(message)


@dataclass
class PhaseState:
    state: str
    data: dict[str, Any] = field(default_factory=dict)
    assignment: Assignment | None = None
    training: TrainingState | None = None


def study_close_if_past_deadline(*, study: Study) -> bool:
    """An open (or paused) study whose deadline has passed is closed now, logged as a change."""
    if study.deadline is None or study.deadline > timezone.now() or study.status not in (
            Study.Status.OPEN, Study.Status.PAUSED):
        return False
    from annotation.services.studies import StudyError, study_set_status

    try:
        with transaction.atomic():
            study_set_status(study=study, status=Study.Status.CLOSED)
            StudyChange.objects.create(study=study, field="deadline", old=study.deadline.isoformat(timespec="minutes"),
                                       new="passed: the study closed")
    except StudyError:  # closed a moment ago by another request
        study.refresh_from_db(fields=["status"])
        return False
    return True


def studies_close_past_deadline() -> int:
    """Close every open or paused study whose deadline has passed; the number closed."""
    due = Study.objects.filter(deadline__lte=timezone.now(), status__in=(Study.Status.OPEN, Study.Status.PAUSED))
    return sum(study_close_if_past_deadline(study=study) for study in due)


def _records(study: Study, rater) -> dict[str, PhaseRecord]:
    if not any(k in study.phases for k in ("consent", "pre_questionnaire", "instructions", "attention_policy",
                                           "post_questionnaire")):
        return {}
    return {r.phase: r for r in PhaseRecord.objects.filter(study=study, rater=rater)}


def _questionnaire(study: Study, which: str) -> dict:
    q = study.phases[QUESTIONNAIRE_KEYS[which]]
    return {"which": which, "title": q.get("title", ""), "intro": q.get("intro", ""), "questions": q["questions"]}


def _screened_out(study: Study, reason: str, crowd: CrowdState | None, **extra) -> PhaseState:
    return PhaseState("screened_out", {"reason": reason, "return_url": return_url(study, crowd, reason), **extra})


def return_url(study: Study, crowd: CrowdState | None, reason: str) -> str:
    """Where a screened-out participant goes back to the panel: Prolific's completion address with
    the study's screen-out (or no-consent) code, else the link's own return address."""
    if crowd is None:
        return ""
    code = (study.phases.get("consent", {}).get("return_code") if reason == "consent_declined"
            else study.phases.get("screened_out", {}).get("code"))
    link = crowd.participant.link
    if code and link.provider == link.Provider.PROLIFIC:
        from urllib.parse import urlencode

        from annotation.services.crowd import PROLIFIC_COMPLETE

        return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': code})}"
    return link.completion_url


def _before_rating(study: Study, rater, crowd: CrowdState | None) -> PhaseState | None:
    """The first phase before rating that the participant has not passed, or None. No writes
    except closing a study past its deadline."""
    study_close_if_past_deadline(study=study)
    if study.status != Study.Status.OPEN:
        return PhaseState("closed")
    phases = study.phases
    records = _records(study, rater)
    if "consent" in phases:
        consent = records.get(Phase.CONSENT)
        if consent is None:
            return PhaseState("consent", {"text": phases["consent"]["text"]})
        if consent.outcome == PhaseRecord.Outcome.DECLINED:
            return _screened_out(study, "consent_declined", crowd)
    if "pre_questionnaire" in phases and Phase.PRE not in records:
        return PhaseState("questionnaire", _questionnaire(study, "pre"))
    # The attention policy is shown in the instructions, so a policy alone makes an instructions phase.
    if ("instructions" in phases or "attention_policy" in phases) and Phase.INSTRUCTIONS not in records:
        instructions = phases.get("instructions", {})
        return PhaseState("instructions", {
            "text": instructions.get("text", ""), "check": [
                {k: v for k, v in q.items() if k != "correct"} for q in instructions.get("check", [])],
            "attention_policy": phases.get("attention_policy")})
    training = training_state(study, rater)
    if not training.qualified:
        if training.in_progress:
            return PhaseState("training", training=training)
        attempt = training.attempt
        result = {"attempt": attempt.number, "n_correct": attempt.n_correct, "n_items": attempt.n_items,
                  "pass_mark": study.training_pass_mark, "retry_left": training.can_retry,
                  "attempts_allowed": MAX_ATTEMPTS}
        if training.can_retry:
            return PhaseState("training_failed", result, training=training)
        return PhaseState("screened_out", {"reason": "training_failed", "training": result,
                                           "return_url": return_url(study, crowd, "training_failed")},
                          training=training)
    return None


def phase_state(*, study: Study, rater, crowd: CrowdState | None = None) -> PhaseState:
    """Where the participant stands, with what that phase needs; in `training` and `rate` the
    assignment to answer (taken from the assignment engine)."""
    blocked = _before_rating(study, rater, crowd)
    if blocked is not None and blocked.state == "screened_out" and crowd is not None:
        crowd_finish(crowd)  # their participation ends here: the time is recorded, nothing is held
    if blocked is not None and blocked.state != "training":
        return blocked
    if crowd is not None and (crowd.quota_reached or crowd.time_up) and blocked is None:
        return _after_rating(study, rater, crowd)
    try:
        assignment = assignment_next(study=study, rater=rater)
    except RaterPaused:
        return PhaseState("paused")
    if assignment is not None:
        if assignment.item.is_training:  # read after the engine started the attempt
            return PhaseState("training", assignment=assignment, training=training_state(study, rater))
        return PhaseState("rate", assignment=assignment)
    if blocked is not None:  # training with no item to give (a race with a retry): ask again
        return blocked
    return _after_rating(study, rater, crowd)


def _after_rating(study: Study, rater, crowd: CrowdState | None) -> PhaseState:
    if "post_questionnaire" in study.phases and Phase.POST not in _records(study, rater):
        return PhaseState("questionnaire", _questionnaire(study, "post"))
    if crowd is not None:
        crowd_finish(crowd)
    data = {}
    if text := study.phases.get("completion", {}).get("text"):
        data["completion_text"] = text
    if crowd is not None:
        data.update(completion_code=crowd.participant.link.completion_code, completion_url=crowd.completion_url)
    return PhaseState("done", data)


def phase_require(*, study: Study, rater, assignment: Assignment, crowd: CrowdState | None = None) -> None:
    """Refuse answering `assignment` unless the participant has passed every phase before it: a
    training item in the training phase, a regular item only once training is passed."""
    blocked = _before_rating(study, rater, crowd)
    if blocked is None:
        return
    if blocked.state == "training" and assignment.item.is_training:
        return
    raise PhaseOrderError(blocked.state, f"this answers an item, but the participant is in the {blocked.state} phase")


def _expect(study: Study, rater, want: str, *, which: str = "", crowd: CrowdState | None = None) -> None:
    if want == "post":  # after rating: ask the state machine itself (it may hand out the next item)
        now = phase_state(study=study, rater=rater, crowd=crowd)
        if now.state != "questionnaire" or now.data.get("which") != "post":
            raise PhaseOrderError(now.state, f"the post-study questionnaire comes after rating, not in the "
                                             f"{now.state} phase")
        return
    blocked = _before_rating(study, rater, crowd)
    state = blocked.state if blocked else "rate"
    current = blocked.data.get("which") if blocked and blocked.state == "questionnaire" else ""
    if state != want or (which and current != which):
        label = f"{which}-study questionnaire" if which else want
        raise PhaseOrderError(state, f"the {label} is not the participant's phase now ({state})")


def _record(*, study: Study, rater, phase: str, outcome: str, answers: dict) -> PhaseRecord:
    try:
        with transaction.atomic():
            return PhaseRecord.objects.create(study=study, rater=rater, phase=phase, outcome=outcome, answers=answers)
    except IntegrityError:  # a double submit: the first answer stands
        return PhaseRecord.objects.get(study=study, rater=rater, phase=phase)


def phase_consent(*, study: Study, rater, agree: bool) -> PhaseRecord:
    """Agree continues; decline ends the participation and keeps only the decline."""
    _expect(study, rater, "consent")
    return _record(study=study, rater=rater, phase=Phase.CONSENT, answers={},
                   outcome=PhaseRecord.Outcome.AGREED if agree else PhaseRecord.Outcome.DECLINED)


def phase_questionnaire(*, study: Study, rater, which: str, answers: Any,
                        crowd: CrowdState | None = None) -> PhaseRecord:
    if which not in QUESTIONNAIRE_KEYS:
        raise PhaseOrderError("", f"no questionnaire {which!r}: pre or post")
    if QUESTIONNAIRE_KEYS[which] not in study.phases:
        raise PhaseOrderError("", f"this study has no {which}-study questionnaire")
    _expect(study, rater, "post" if which == "post" else "questionnaire", which=which, crowd=crowd)
    clean = answers_clean(study.phases[QUESTIONNAIRE_KEYS[which]]["questions"], answers)
    return _record(study=study, rater=rater, phase=which, outcome=PhaseRecord.Outcome.ANSWERED, answers=clean)


def phase_instructions(*, study: Study, rater, answers: Any = None) -> PhaseRecord:
    """The instructions read; with a comprehension check, every check answered as they say."""
    _expect(study, rater, "instructions")
    check = study.phases.get("instructions", {}).get("check", [])
    clean = answers_clean(check, answers or {}) if check else {}
    if check and (wrong := check_errors(check, clean)):
        raise AnswersError(wrong)
    return _record(study=study, rater=rater, phase=Phase.INSTRUCTIONS, outcome=PhaseRecord.Outcome.ANSWERED,
                   answers=clean)


def study_phases_update(*, study: Study, user, text: str) -> bool:
    """Set the study's phases from YAML or JSON text (validated whole: PhasesError names each
    path); the change is logged. Returns whether anything changed."""
    from annotation.questionnaires import PhasesError, phases_parse

    if too_long := text_problem("phases.text", text, name="phases"):  # before it is parsed
        raise PhasesError([("", too_long)])
    phases = phases_parse(text)
    with transaction.atomic():
        old = Study.objects.select_for_update().values_list("phases", flat=True).get(pk=study.pk)
        if old == phases:
            return False
        Study.objects.filter(pk=study.pk).update(phases=phases)
        StudyChange.objects.create(study=study, user=user, field="participant phases",
                                   old=", ".join(old) or "—", new=", ".join(phases) or "—")
    study.phases = phases
    return True


def phase_answers_table(study: Study) -> tuple[list[str], list[dict]]:
    """One row per participant who answered a phase: rater, panel id, consent, then one column per
    question (`pre.<key>`, `instructions.<key>`, `post.<key>`); multiple choices joined by '; '."""
    from annotation.models import CrowdParticipant

    columns = ["rater", "participant_id", "consent", "consent_at"]
    for prefix, section, key in (("pre", "pre_questionnaire", "questions"), ("instructions", "instructions", "check"),
                                 ("post", "post_questionnaire", "questions")):
        columns += [f"{prefix}.{q['key']}" for q in study.phases.get(section, {}).get(key, [])]
    pids = dict(CrowdParticipant.objects.filter(link__study=study).values_list("user_id", "participant_id"))
    rows: dict[int, dict] = {}
    for r in PhaseRecord.objects.filter(study=study).select_related("rater").order_by("rater__username", "at"):
        row = rows.setdefault(r.rater_id, {"rater": r.rater.username, "participant_id": pids.get(r.rater_id, "")})
        if r.phase == Phase.CONSENT:
            row.update(consent=r.outcome, consent_at=r.at.isoformat(timespec="seconds"))
        for key, value in r.answers.items():
            row[f"{r.phase}.{key}"] = "; ".join(map(str, value)) if isinstance(value, list) else value
    return columns, list(rows.values())
