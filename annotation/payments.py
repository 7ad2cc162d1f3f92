"""The per-rater time and payment sheet of a study, and the payment decision it shares with the
Progress page: what each rater did, how long it took, the decision with its reason, and, given a
rate, what to pay and any bonus.

    payment_decision(...) -> Decision                  # pure: the decision and its reason
    rater_decisions(study) -> {rater id: Decision}     # what the Progress page shows
    payment_rows(study, pay_per_item=None, bonus_per_item=None) -> [dict]   # PAYMENT_COLUMNS
    bulk_approve_lines(rows) / bulk_bonus_lines(rows)  # the panel's paste formats

The decision follows the phase the participant reached (phase_reached), by the rule in RULES that
is shown beside it: declined consent or returned the task is a `return` (the panel's own way out,
unpaid); failing training screens out with the study's fixed screen-out payment and is never a
rejection (training answers are never attention checks); a rejection follows only the study's
written attention policy (`phases.attention_policy.reject_after_failed`, shown in the instructions);
only a participant who finished is approved; one who may still go on is `pending`; one who left
(time up, study closed) is paid the rated items (`partial`) or, with none, asked to return. Attention-
check items count as work but are not payable items. Time on task counts every answer, those a training
retry replaced too (their time is kept on the attempt).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from statistics import median

from django.db.models import Count, Q, Sum

from annotation.models import Assignment, CrowdParticipant, PhaseRecord, Study, TrainingAttempt

PAYMENT_COLUMNS = (
    "rater", "provider", "participant_id", "session_id", "started_at", "finished_at", "returned_at",
    "phase_reached", "items_submitted", "training", "attention_checks", "attention_failed", "decision", "rule",
    "reason", "payable_items", "time_on_task_s", "median_s_per_item", "pay_per_item", "payment", "bonus",
)
APPROVE, REJECT, SCREENED_OUT, RETURN, PARTIAL, PENDING = (
    "approve", "reject", "screened_out", "return", "partial", "pending")

# The rule behind each decision, shown beside it (sheet, CSV, Progress page): the decision follows the
# phase the participant reached, never a default. Checked in this order.
RULES = {
    "declined": (RETURN, "declined consent -> return: not paid, asked to return the study on the panel"),
    "screened_out": (SCREENED_OUT, "failed training on every attempt -> screened out: the study's fixed "
                                   "screen-out payment, never a rejection"),
    "returned": (RETURN, "returned the task -> return: not paid by approval, their rated items are kept"),
    "attention": (REJECT, "failed attention checks up to the study's written policy -> reject"),
    "finished": (APPROVE, "finished (shown the completion code) -> approve: the rated items are paid"),
    "in_progress": (PENDING, "started and may still go on (study open, time left) -> pending: decided when they "
                             "finish, return or run out of time"),
    "left_midway": (PARTIAL, "left midway (rated items, never finished; time up or study closed) -> partial: "
                             "pay the rated items, not the whole reward; never a rejection"),
    "left_before_rating": (RETURN, "left before rating anything (time up or study closed) -> return: no work to "
                                   "pay, asked to return the study; never a rejection"),
    "member_rated": (APPROVE, "a study member, not a crowd participant, with rated items -> approve them"),
    "member_idle": (PENDING, "a study member, not a crowd participant, with nothing rated -> pending"),
}


@dataclass(frozen=True)
class Decision:
    decision: str
    reason: str
    rule: str = ""  # RULES' text: why this phase gets this decision


def _decision(rule: str, reason: str) -> Decision:
    decision, text = RULES[rule]
    return Decision(decision, reason, text)


def _share(mark: float | None) -> str:
    return f"{mark * 100:g}%" if mark is not None else ""


def training_summary(attempts: list[tuple[int, int, bool | None]]) -> str:
    """'passed 1/2', 'failed 0/2, then 1/2', 'in progress' from (correct, items, passed) per attempt."""
    if not attempts:
        return ""
    scores = ", then ".join(f"{c}/{n}" for c, n, _ in attempts if _ is not None)
    last = attempts[-1][2]
    if last is None:
        return f"in progress{f' (after {scores})' if scores else ''}"
    return f"{'passed' if last else 'failed'} {scores}"


def phase_reached(*, consent_declined: bool = False, phases_done: tuple[str, ...] = (),
                  training: list[tuple[int, int, bool | None]] = (), training_failed_out: bool = False,
                  rated: int = 0, finished: bool = False, returned: bool = False) -> str:
    """The furthest step a participant reached, in the words of the study's phases (`finished`: shown
    the completion, or the screen-out that ends a failed training)."""
    if consent_declined:
        return "declined consent"
    if training_failed_out:
        return f"training {training_summary(training)}"
    if finished and not returned:
        return "finished"
    if rated:
        reached = f"rated {rated} item{'s' if rated != 1 else ''}"
    elif training:
        reached = f"training {training_summary(training)}"
    elif phases_done:
        reached = {"consent": "consent given", "pre": "pre-study questionnaire answered",
                   "instructions": "instructions read and checked"}[phases_done[-1]]
    else:
        reached = "opened the link only"
    return f"returned the task after: {reached}" if returned else reached


def payment_decision(*, consent_declined: bool = False, returned: bool = False,
                     training: list[tuple[int, int, bool | None]] = (), training_failed_out: bool = False,
                     pass_mark: float | None = None, checks: int = 0, failed: int = 0,
                     reject_after: int | None = None, crowd: bool = True, rated: int = 0, finished: bool = False,
                     can_continue: bool = False, reached: str = "") -> Decision:
    """One participant's decision, the rule it follows (RULES) and why, from plain facts: `rated`
    items (attention checks and training excluded), `finished` (shown the completion), and whether
    they `can_continue` (not finished or returned, study open, time left)."""
    if consent_declined:
        return _decision("declined", "declined consent: only the decline is kept")
    if training_failed_out:
        return _decision("screened_out", f"did not reach the training pass mark ({_share(pass_mark)}): "
                                         f"{training_summary(training)}; screened out, not rejected")
    if returned:
        return _decision("returned", f"{reached or 'returned the task'}; {rated} rated item{'s' if rated != 1 else ''}"
                                     " kept")
    policy = (f"the study's policy rejects at {reject_after} failed attention checks" if reject_after
              else "the study has no attention policy, so failed checks never reject")
    if reject_after and failed >= reject_after:
        return _decision("attention", f"failed {failed} of {checks} attention checks; {policy}")
    parts = [f"passed training {training_summary(training)[len('passed '):]}"] if training and training[-1][2] else []
    parts.append(f"failed {failed} of {checks} attention checks ({policy})")
    if not crowd:
        return _decision("member_rated" if rated else "member_idle", "; ".join([f"{rated} rated items", *parts]))
    if finished:
        return _decision("finished", "; ".join([f"finished with {rated} rated items", *parts]))
    if can_continue:
        return _decision("in_progress", f"reached: {reached or 'opened the link only'}")
    if rated:
        return _decision("left_midway", "; ".join([f"left after {rated} rated items", *parts]))
    return _decision("left_before_rating", f"reached: {reached or 'opened the link only'}")


_PHASE_ORDER = ("consent", "pre", "instructions")


def _facts(study: Study) -> dict[int, dict]:
    """Per rater: submitted work, attention checks (training excluded), training attempts, phases answered."""
    facts: dict[int, dict] = {}

    def row(rater_id: int) -> dict:
        return facts.setdefault(rater_id, _no_facts())

    counts = (Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED).values("rater_id")
              .annotate(checks=Count("id", filter=Q(is_attention_check=True, item__is_training=False)),
                        failed=Count("id", filter=Q(is_attention_check=True, item__is_training=False,
                                                    attention_passed=False)),
                        rated=Count("id", filter=Q(is_attention_check=False, item__is_training=False))))
    for c in counts:
        row(c["rater_id"]).update(checks=c["checks"], failed=c["failed"], rated=c["rated"])
    for rater_id, correct, n, passed in (TrainingAttempt.objects.filter(study=study).order_by("rater_id", "number")
                                         .values_list("rater_id", "n_correct", "n_items", "passed")):
        row(rater_id)["training"].append((correct, n, passed))
    for rater_id, phase, outcome in PhaseRecord.objects.filter(study=study).values_list("rater_id", "phase", "outcome"):
        if phase == PhaseRecord.Phase.CONSENT and outcome == PhaseRecord.Outcome.DECLINED:
            row(rater_id)["consent_declined"] = True
        elif phase in _PHASE_ORDER:
            row(rater_id)["phases"].add(phase)
    return facts


def _no_facts() -> dict:
    return {"training": [], "checks": 0, "failed": 0, "rated": 0, "consent_declined": False, "phases": set()}


def _decide(study: Study, f: dict, participant: CrowdParticipant | None) -> tuple[Decision, str]:
    """The decision and the phase reached of one rater (`participant`: their crowd entry, if any)."""
    from django.utils import timezone

    from annotation.services.training import MAX_ATTEMPTS

    training = f["training"]
    failed_out = bool(training) and training[-1][2] is False and len(training) >= MAX_ATTEMPTS
    finished = bool(participant and participant.finished_at)
    returned = bool(participant and participant.returned_at)
    time_left = participant is not None and (participant.deadline is None or participant.deadline > timezone.now())
    reached = phase_reached(consent_declined=f["consent_declined"],
                            phases_done=tuple(p for p in _PHASE_ORDER if p in f["phases"]), training=training,
                            training_failed_out=failed_out, rated=f["rated"], finished=finished, returned=returned)
    decision = payment_decision(
        consent_declined=f["consent_declined"], returned=returned, training=training, training_failed_out=failed_out,
        pass_mark=study.training_pass_mark, checks=f["checks"], failed=f["failed"],
        reject_after=study.phases.get("attention_policy", {}).get("reject_after_failed"),
        crowd=participant is not None, rated=f["rated"], finished=finished, reached=reached,
        can_continue=(time_left and not finished and not returned
                      and study.status in (Study.Status.OPEN, Study.Status.PAUSED)))
    return decision, reached


def _participants(study: Study) -> dict[int, CrowdParticipant]:
    """Each rater's crowd entry in this study (the latest when several links), with link and account."""
    return {p.user_id: p for p in CrowdParticipant.objects.filter(link__study=study).select_related("link", "user")
            .order_by("started_at")}


def rater_decisions(study: Study, rater_ids) -> dict[int, Decision]:
    """The decision per rater id, as the payment sheet gives it (for the Progress page)."""
    crowd = _participants(study)
    facts = _facts(study)
    return {rater_id: _decide(study, facts.get(rater_id) or _no_facts(), crowd.get(rater_id))[0]
            for rater_id in rater_ids}


MAX_AMOUNT_PER_ITEM = Decimal("1000")  # far above any panel's rate; bounds what _money must hold


def payment_amount(raw: str, *, field: str) -> Decimal | None:
    """An amount per item from a query string or form: empty is none; else 0 to MAX_AMOUNT_PER_ITEM with
    at most 4 decimals. ValueError names the field (`payments.csv?pay_per_item=1e30` answered 500)."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        amount = Decimal(raw)
        ok = amount.is_finite() and 0 <= amount <= MAX_AMOUNT_PER_ITEM and amount == amount.quantize(Decimal("0.0001"))
    except InvalidOperation:
        ok = False
    if not ok:
        raise ValueError(f"{field}: {raw[:40]!r} is not an amount from 0 to {MAX_AMOUNT_PER_ITEM} per item "
                         f"(at most 4 decimals)")
    return amount


def _money(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01")))


def payment_rows(study: Study, pay_per_item: Decimal | None = None,
                 bonus_per_item: Decimal | None = None) -> list[dict]:
    work: dict[int, dict] = {}
    for rater_id, username, check, training, ms in (
            Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED)
            .order_by("rater__username", "submitted_at")
            .values_list("rater_id", "rater__username", "is_attention_check", "item__is_training", "time_on_task_ms")
            .iterator(chunk_size=2000)):
        w = work.setdefault(rater_id, {"rater": username, "n": 0, "items": 0, "ms": []})
        w["n"] += 1
        w["ms"].append(ms)
        w["items"] += not check and not training
    # A training retry replaced the first attempt's answers; their time was kept on the attempt.
    replaced: dict[int, int] = {}
    for rater_id, username, ms in (TrainingAttempt.objects.filter(study=study, time_on_task_ms__gt=0)
                                   .values("rater_id", "rater__username").annotate(ms=Sum("time_on_task_ms"))
                                   .values_list("rater_id", "rater__username", "ms")):
        replaced[rater_id] = ms
        work.setdefault(rater_id, {"rater": username, "n": 0, "items": 0, "ms": []})
    crowd = _participants(study)
    for user_id, p in crowd.items():  # a participant who submitted nothing (declined, returned) is listed too
        work.setdefault(user_id, {"rater": p.user.username, "n": 0, "items": 0, "ms": []})
    facts = _facts(study)
    screened_pay = Decimal(str(study.phases.get("screened_out", {}).get("payment", "0")))
    rows = []
    for user_id, w in sorted(work.items(), key=lambda kv: kv[1]["rater"]):
        p = crowd.get(user_id)
        f = facts.get(user_id) or _no_facts()
        decision, reached = _decide(study, f, p)
        payable = w["items"] if decision.decision in (APPROVE, PARTIAL) else 0
        if pay_per_item is None:
            payment = ""
        elif decision.decision == SCREENED_OUT:
            payment = _money(screened_pay)
        else:
            payment = _money(pay_per_item * payable)
        rows.append({
            "rater": w["rater"], "provider": p.link.provider if p else "",
            "participant_id": p.participant_id if p else "", "session_id": p.session_id if p else "",
            "started_at": p.started_at.isoformat(timespec="seconds") if p else "",
            "finished_at": p.finished_at.isoformat(timespec="seconds") if p and p.finished_at else "",
            "returned_at": p.returned_at.isoformat(timespec="seconds") if p and p.returned_at else "",
            "phase_reached": reached, "items_submitted": w["n"], "training": training_summary(f["training"]),
            "attention_checks": f["checks"], "attention_failed": f["failed"],
            "decision": decision.decision, "rule": decision.rule, "reason": decision.reason, "payable_items": payable,
            "time_on_task_s": round((sum(w["ms"]) + replaced.get(user_id, 0)) / 1000, 1),
            "median_s_per_item": round(median(w["ms"]) / 1000, 1) if w["ms"] else "",
            "pay_per_item": "" if pay_per_item is None else str(pay_per_item),
            "payment": payment,
            "bonus": "" if bonus_per_item is None else _money(bonus_per_item * payable),
        })
    return rows


def bulk_approve_lines(rows: list[dict]) -> list[str]:
    """Prolific's bulk approve box: the participant ids to approve, one per line."""
    return [r["participant_id"] for r in rows if r["decision"] == APPROVE and r["participant_id"]]


def bulk_bonus_lines(rows: list[dict]) -> list[str]:
    """Prolific's bulk bonus box: `participant id,amount` per line, no header, amounts above zero."""
    return [f"{r['participant_id']},{r['bonus']}" for r in rows
            if r["participant_id"] and r["bonus"] and Decimal(r["bonus"]) > 0]
