"""The per-rater time and payment sheet of a study: what each rater did, how long it took, what
failed an attention check (work to reject), and, given a rate, what to pay.

    payment_rows(study, pay_per_item=None) -> [dict]   # PAYMENT_COLUMNS, one row per rater

A rater who failed any attention check is marked `reject` (panels such as Prolific allow
rejecting a submission for failed attention checks); the others `approve`. Only approved raters'
rated items are payable; attention-check items count as work but not as payable items.
"""

from __future__ import annotations

from decimal import Decimal
from statistics import median

from annotation.models import Assignment, CrowdParticipant, Study

PAYMENT_COLUMNS = (
    "rater", "provider", "participant_id", "session_id", "started_at", "finished_at", "returned_at",
    "items_submitted", "attention_checks", "attention_failed", "decision", "payable_items",
    "time_on_task_s", "median_s_per_item", "pay_per_item", "payment",
)


def payment_rows(study: Study, pay_per_item: Decimal | None = None) -> list[dict]:
    work: dict[int, dict] = {}
    for rater_id, username, check, passed, ms in (
            Assignment.objects.filter(study=study, status=Assignment.Status.SUBMITTED)
            .order_by("rater__username", "submitted_at")
            .values_list("rater_id", "rater__username", "is_attention_check", "attention_passed", "time_on_task_ms")
            .iterator(chunk_size=2000)):
        w = work.setdefault(rater_id, {"rater": username, "n": 0, "checks": 0, "failed": 0, "items": 0, "ms": []})
        w["n"] += 1
        w["ms"].append(ms)
        if check:
            w["checks"] += 1
            w["failed"] += passed is False
        else:
            w["items"] += 1
    crowd = {p.user_id: p for p in CrowdParticipant.objects.filter(link__study=study).select_related("link")
             .order_by("started_at")}
    for user_id, p in crowd.items():  # a participant who returned before submitting anything is listed too
        work.setdefault(user_id, {"rater": p.user.username, "n": 0, "checks": 0, "failed": 0, "items": 0, "ms": []})
    rows = []
    for user_id, w in sorted(work.items(), key=lambda kv: kv[1]["rater"]):
        p = crowd.get(user_id)
        decision = "reject" if w["failed"] else "approve"
        payable = w["items"] if decision == "approve" else 0
        rows.append({
            "rater": w["rater"], "provider": p.link.provider if p else "",
            "participant_id": p.participant_id if p else "", "session_id": p.session_id if p else "",
            "started_at": p.started_at.isoformat(timespec="seconds") if p else "",
            "finished_at": p.finished_at.isoformat(timespec="seconds") if p and p.finished_at else "",
            "returned_at": p.returned_at.isoformat(timespec="seconds") if p and p.returned_at else "",
            "items_submitted": w["n"], "attention_checks": w["checks"], "attention_failed": w["failed"],
            "decision": decision, "payable_items": payable,
            "time_on_task_s": round(sum(w["ms"]) / 1000, 1),
            "median_s_per_item": round(median(w["ms"]) / 1000, 1) if w["ms"] else "",
            "pay_per_item": "" if pay_per_item is None else str(pay_per_item),
            "payment": "" if pay_per_item is None else str((pay_per_item * payable).quantize(Decimal("0.01"))),
        })
    return rows
