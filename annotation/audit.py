"""The audit log of admin actions: data and payment-sheet downloads, member and setting changes,
erasures, releases, purges. Services and views that do such an action call audit_record; the
admins' page (annotation.views.audit) reads it.

    audit_record(actor=request.user, action=AuditEntry.Action.PAYMENT_DOWNLOAD, study=study,
                 target="study-payments.csv", detail={"pay_per_item": "0.15"})
"""

from __future__ import annotations

import re
from typing import Any

from datetime import timedelta

from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

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


def replace_name(text: str, old: str, new: str) -> str:
    """`text` with the username `old` replaced by `new` where it stands as a whole name: in
    "added ann, anna" renaming "ann" leaves "anna" alone. A name is bounded by characters a
    username cannot hold (letters, digits and @ . + - _ can); a full stop right after it ends a
    sentence, not the name."""
    if not old or old not in text:
        return text
    pattern = re.compile(rf"(?<![\w.@+-]){re.escape(old)}(?![\w@+-]|\.[\w@+-])")
    return pattern.sub(lambda _: new, text)


def replace_name_in(value: Any, old: str, new: str) -> Any:
    """replace_name in every string of a JSON-like value (an audit entry's detail)."""
    if isinstance(value, str):
        return replace_name(value, old, new)
    if isinstance(value, list):
        return [replace_name_in(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: replace_name_in(v, old, new) for k, v in value.items()}
    return value


def audit_rename_person(*, study: Study, old: str, new: str) -> int:
    """Entries of `study` that name the username `old` (as their actor, in their target, or
    anywhere in their detail, e.g. a list of members added at once) name `new` instead, word
    for word; other people's names are left as they are. An erased or purged participant's
    username carries their panel id. Returns the entries changed."""
    changed = []
    entries = (AuditEntry.objects.filter(study=study).annotate(detail_text=Cast("detail", TextField()))
               .filter(Q(actor_name=old) | Q(target__contains=old) | Q(detail_text__contains=old)))
    for entry in entries.select_for_update(of=("self",)):
        before = (entry.actor_name, entry.target, entry.detail)
        entry.actor_name = new if entry.actor_name == old else entry.actor_name
        entry.target = replace_name(entry.target, old, new)[:200]
        entry.detail = replace_name_in(entry.detail, old, new)
        if (entry.actor_name, entry.target, entry.detail) != before:
            changed.append(entry)
    AuditEntry.objects.bulk_update(changed, ["actor_name", "target", "detail"])
    return len(changed)


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


def audit_download(*, actor, study: Study, target: str, query=None, action: str = Action.DATA_DOWNLOAD,
                   **detail) -> AuditEntry:
    """The one entry of a response that serves participants' personal data (config/routes.py marks
    those routes): who, which study, which file, and the parameters asked with (the query string)."""
    parameters = dict(query.items()) if query else {}
    return audit_record(actor=actor, action=action, study=study, target=target,
                        detail={**detail, **({"parameters": parameters} if parameters else {})})


# A page's own htmx refresh (the progress page polls) is the same viewing as the page it refreshes: within
# this time of that viewer's entry for the page, it writes none of its own.
REFRESH_WINDOW = timedelta(minutes=10)


def audit_page(*, request, study: Study, target: str) -> AuditEntry | None:
    """The one entry of a page that shows participants' data (panel ids with times, raters named with their
    statistics): who, which study, which page, with the query string asked."""
    if getattr(request, "htmx", False) and AuditEntry.objects.filter(
            actor_id=request.user.pk, action=Action.PAGE_VIEW, study=study, target=target,
            at__gte=timezone.now() - REFRESH_WINDOW).exists():
        return None
    return audit_download(actor=request.user, study=study, target=target, query=request.GET, action=Action.PAGE_VIEW)
