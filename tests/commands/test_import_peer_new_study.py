"""import_peer --create-study: a study made from a peer's export (the real Label Studio 1.23.2 and Potato
2.12.1 files of tests/fixtures/peers), with its items and its annotations as ratings, open or paused; a
refused file leaves no study, account or item behind."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Item, Rating, Study, StudyChange

pytestmark = pytest.mark.django_db

PEERS = Path(__file__).resolve().parent.parent / "fixtures" / "peers"
LS = ("--from", "label-studio", str(PEERS / "label_studio" / "export.json"),
      "--mapping", str(PEERS / "label_studio.mapping.yaml"))
POTATO = ("--from", "potato", str(PEERS / "potato"), "--mapping", str(PEERS / "potato.mapping.yaml"))


def run(*args) -> str:
    out = StringIO()
    call_command("import_peer", *args, stdout=out)
    return out.getvalue()


def test_a_new_study_from_a_potato_project_left_open(preset_version):
    """No stored rubric but the preset: it is installed, and the study pins it."""
    out = run("--create-study", "Potato pilot", "--rubric", "rrgen-001", "--open", *POTATO)
    study = Study.objects.get(slug="potato-pilot")
    assert study.status == "open" and study.rubric_version == preset_version["rrgen-001"]
    assert out.splitlines()[0] == "created study potato-pilot (open) on rubric rrgen-001 v1"
    assert study.items.count() == 3 and Rating.objects.filter(assignment__study=study).count() == 90
    assert list(StudyChange.objects.filter(study=study, field="status").values_list("old", "new")) == [("draft", "open")]


def test_without_open_the_study_is_paused_and_the_log_says_why(db):
    run("--create-study", "From LS", "--rubric", "rrgen-001", *LS)
    study = Study.objects.get(slug="from-ls")
    assert study.status == "paused"
    assert list(StudyChange.objects.filter(study=study, field="status").order_by("pk").values_list("old", "new")) == [
        ("draft", "open"), ("open", "paused")]  # opened to take the ratings as submits, then paused


def test_an_export_without_annotations_makes_a_draft(tmp_path, db):
    tasks = json.loads((PEERS / "label_studio" / "export.json").read_text())
    for task in tasks:
        task["annotations"] = []
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    out = run("--create-study", "Items only", "--rubric", "rrgen-001", "--from", "label-studio", str(path),
              "--mapping", str(PEERS / "label_studio.mapping.yaml"))
    study = Study.objects.get(slug="items-only")
    assert study.status == "draft" and study.items.count() == 3 and not Rating.objects.exists()
    assert "(draft; open it when raters may start)" in out and "0 annotations by 0 raters" in out


def test_a_refused_file_leaves_no_study_behind(tmp_path, db):
    tasks = json.loads((PEERS / "label_studio" / "export.json").read_text())
    tasks[1]["annotations"][0]["result"][1]["value"]["rating"] = 9
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    users = get_user_model().objects.count()
    with pytest.raises(CommandError, match="choose a whole number from 1 to 7"):
        run("--create-study", "Broken", "--rubric", "rrgen-001", "--from", "label-studio", str(path),
            "--mapping", str(PEERS / "label_studio.mapping.yaml"))
    assert not Study.objects.filter(slug="broken").exists() and not Item.objects.exists()
    assert get_user_model().objects.count() == users


def test_an_unknown_rubric_is_named_with_the_known_ones(db):
    with pytest.raises(CommandError, match="--rubric: unknown rubric 'rrgen'; known: aqua-003, codegen-002"):
        run("--create-study", "X", "--rubric", "rrgen", *LS)
    assert not Study.objects.exists()
