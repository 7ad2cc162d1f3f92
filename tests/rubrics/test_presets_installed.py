"""A site set up with `migrate` alone (the Docker deployment: migrate, then gunicorn) offers the built-in presets:
on the new-study page and to the API's clients. A `flush` does not bring them back."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from rubrics.loader import list_presets, load_preset, rubric_checksum
from rubrics.models import Rubric, RubricVersion

pytestmark = pytest.mark.django_db(transaction=True)


def test_migrate_installs_every_preset_once_and_flush_does_not(client_for, admin_user):
    Rubric.objects.all().delete()
    call_command("migrate", verbosity=0)  # nothing left to apply: a deployment's start
    call_command("migrate", verbosity=0)  # twice: nothing new
    stored = {v.rubric.slug: v for v in RubricVersion.objects.select_related("rubric")}
    assert set(stored) == set(list_presets()) and RubricVersion.objects.count() == len(list_presets())
    assert all(v.checksum == rubric_checksum(load_preset(slug)) and v.rubric.is_preset for slug, v in stored.items())
    page = client_for(admin_user).get("/studies/new/").content.decode()
    assert all(f'value="{v.pk}"' in page for v in stored.values())  # offered on the new-study page
    listed = client_for(admin_user).get("/api/rubrics/").json()["results"]
    assert {r["slug"] for r in listed} == set(list_presets())

    call_command("flush", verbosity=0, interactive=False)
    assert not Rubric.objects.exists()
