"""Demo data for `make run`: one open study per seed preset, with accounts to try it.

Idempotent: a second run reuses what is there. Demo passwords are for a local machine only;
set CONCORD_DEMO_PASSWORD to choose one password for every demo account.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import Study, StudyMember
from annotation.services.items import items_import
from annotation.services.studies import study_create, study_members_add, study_set_status
from rubrics.loader import load_preset
from rubrics.services import rubric_presets_install

DEMO_DIR = Path(__file__).resolve().parent / "demo"
ANNOTATORS = ["annotator", "annotator2", "annotator3"]
ACCOUNTS = {"admin": "admin", **{name: "annotator" for name in ANNOTATORS}, "researcher": "researcher"}
PRESENTATION = {"rrgen-001": Study.Presentation.SUCCESSION}


def demo_password(username: str) -> str:
    return os.environ.get("CONCORD_DEMO_PASSWORD") or f"{username}-demo"


@transaction.atomic
def demo_install() -> list[tuple[str, str, str]]:
    """Create demo accounts and studies when missing; return (username, password, role) rows."""
    users = {}
    for username, role in ACCOUNTS.items():
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_password(demo_password(username))
            user.is_staff = user.is_superuser = role == "admin"
            user.save()
        users[username] = user
    versions = {v.rubric.slug: v for v in rubric_presets_install()}
    for slug, version in sorted(versions.items()):
        items_file = DEMO_DIR / f"{slug}.jsonl"
        if Study.objects.filter(slug=f"demo-{slug}").exists() or not items_file.exists():
            continue
        preset = load_preset(slug)
        study = study_create(
            name=f"Demo: {preset['name']}", slug=f"demo-{slug}", rubric_version=version, user=users["admin"],
            presentation=PRESENTATION.get(slug, Study.Presentation.SIDE_BY_SIDE),
            raters_per_item=len(ANNOTATORS), instructions=preset.get("description", ""),
        )
        items_import(study=study, text=items_file.read_text(encoding="utf-8"), filename=items_file.name)
        study_members_add(study=study, usernames=ANNOTATORS, role=StudyMember.Role.ANNOTATOR)
        study_members_add(study=study, usernames=["researcher"], role=StudyMember.Role.RESEARCHER)
        study_set_status(study=study, status=Study.Status.OPEN)
    return [(name, demo_password(name), role) for name, role in ACCOUNTS.items()]
