"""Issue 25: a draft study's Manage page shows its setup steps in order at the top (items, raters,
open), each ticked when done, with the item upload first, and no "Open study" with 0 items."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Study
from annotation.services.studies import study_create
from tests.manage.conftest import items_jsonl

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def _steps(html: str) -> list[tuple[str, bool]]:
    block = html[html.index('id="setup"'):html.index("</ol>", html.index('id="setup"'))]
    return [(label, state == "done") for label, state in
            re.findall(r"<strong>([^<]+)</strong> <span class=\"sr-only\">\((done|to do)\)", block)]


def test_a_new_draft_study_shows_its_steps_with_the_upload_first(client_for, admin_user, annotator, preset_version):
    study = study_create(name="Fresh", rubric_version=preset_version["rrgen-001"], user=admin_user)
    c = client_for(admin_user)
    html = c.get(reverse("study-manage", args=[study.slug])).content.decode()
    assert _steps(html) == [("Upload the items", False), ("Add raters", False), ("Open the study", False)]
    # the setup card, then the upload form, before the status, members, crowd links and invitations
    order = [html.index(f'id="{s}"') for s in ("setup", "upload", "lifecycle", "members", "crowd", "invitations")]
    assert order == sorted(order)
    assert "Open study…" not in html and "Upload items first" in html
    refused = c.post(reverse("manage-status", args=[study.slug]), {"status": "open", "confirm": "on"})
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT and refused.status_code in (200, 400)

    upload = SimpleUploadedFile("items.jsonl", items_jsonl(3).encode())
    answer = c.post(reverse("manage-upload", args=[study.slug]), {"file": upload}, **HX).content.decode()
    # the steps and the status section come back out of band: step 1 ticked, opening offered
    assert _steps(answer)[0] == ("Upload the items", True) and 'hx-swap-oob="true"' in answer
    assert "Open study…" in answer and "3 items uploaded" in answer

    c.post(reverse("manage-members", args=[study.slug]), {"names": annotator.username, "role": "annotator"}, **HX)
    html = c.get(reverse("study-manage", args=[study.slug])).content.decode()
    assert _steps(html) == [("Upload the items", True), ("Add raters", True), ("Open the study", False)]

    c.post(reverse("manage-status", args=[study.slug]), {"status": "open", "confirm": "on"})
    study.refresh_from_db()
    assert study.status == Study.Status.OPEN
    html = c.get(reverse("study-manage", args=[study.slug])).content.decode()
    assert "Set up this study" not in html  # an open study's page is as before
    assert html.index('id="upload"') > html.index('id="invitations"')
