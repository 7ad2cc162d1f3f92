"""The audit log of admin actions: data and payment-sheet downloads, member and setting changes,
erasures, releases, purges. Services and views that do such an action call audit_record; the
admins' page (annotation.views.audit) reads it.

    audit_record(actor=request.user, action=AuditEntry.Action.PAYMENT_DOWNLOAD, study=study,
                 target="study-payments.csv", detail={"pay_per_item": "0.15"})
"""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import AuditEntry, Study

Action = AuditEntry.Action


def audit_record(*, actor, action: str, study: Study | None = None, target: str = "",
                 detail: dict | None = None) -> AuditEntry:
    """One entry; `actor` None (or anonymous) is the system, e.g. a scheduled task."""
    if action not in Action.values:
        raise ValueError(f"action: {action!r} is not one of {', '.join(Action.values)}")
    user = actor if getattr(actor, "is_authenticated", False) else None
    return AuditEntry.objects.create(actor=user, actor_name=user.get_username() if user else "", action=action,
                                     study=study, target=target[:200], detail=detail or {})


def audit_rename_target(*, study: Study, old: str, new: str) -> int:
    """Entries of `study` that name `old` as their target name `new` instead (an erased or purged
    participant's username carries their panel id)."""
    return AuditEntry.objects.filter(study=study, target=old).update(target=new)


def audit_entries(*, study: Study | None = None, action: str = "", limit: int = 200) -> QuerySet[AuditEntry]:
    entries = AuditEntry.objects.select_related("study")
    if study is not None:
        entries = entries.filter(study=study)
    if action:
        entries = entries.filter(action=action)
    return entries[:limit]


def audit_detail_text(detail: dict) -> str:
    """An entry's detail for people: `field: old → new` for changes, lists joined, empty values left out."""
    parts = []
    for key, value in detail.items():
        if isinstance(value, list) and len(value) == 2 and key not in ("added", "formats", "releases_kept"):
            value = f"{value[0]} → {value[1]}"
        elif isinstance(value, list):
            value = ", ".join(map(str, value)) or "–"
        parts.append(f"{key.replace('_', ' ')}: {value}")
    return "; ".join(parts)
