"""The items page's systems menu is cached (reading every output of a 2,000,000-item study for it took
seconds a page): an upload or a deletion that changes the study's systems shows at the next page."""

from __future__ import annotations

import json

import pytest

from annotation.items_list import study_systems
from annotation.models import Item
from annotation.services.item_edits import item_delete
from annotation.services.items import items_import

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit hooks run as in production


def items(prefix: str, systems: list[str]) -> str:
    return "".join(json.dumps({"id": f"{prefix}-{n}", "context": "c", "outputs": [
        {"system": s, "content": f"answer {n}"} for s in systems]}) + "\n" for n in range(3))


def test_the_menu_follows_uploads_and_deletions(make_study, admin_user, client_for):
    study = make_study("rrgen-001", items_text=items("a", ["sys-a", "sys-b"]))
    page = client_for(admin_user).get(f"/studies/{study.slug}/items/").content.decode()
    assert "sys-b" in page and "sys-new" not in page
    items_import(study=study, text=items("n", ["sys-new"]), filename="more.jsonl")
    assert "sys-new" in client_for(admin_user).get(f"/studies/{study.slug}/items/").content.decode()
    for item in Item.objects.filter(study=study, external_id__startswith="n-"):
        item_delete(item=item)
    assert study_systems(study) == ["sys-a", "sys-b"]
