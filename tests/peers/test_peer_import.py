"""import_peer and export_study --format label-studio, on files written by the real Label Studio 1.23.2
and Potato 2.12.1 (tests/fixtures/peers/README.md says how they were made)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Assignment, Item, Output, Rating
from tests.judges_platform.conftest import make_judge, make_run  # noqa: F401  (fixtures)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "peers"
LS_EXPORT = FIXTURES / "label_studio" / "export.json"
LS_MAPPING = FIXTURES / "label_studio.mapping.yaml"
POTATO = FIXTURES / "potato"
POTATO_MAPPING = FIXTURES / "potato.mapping.yaml"
CRITERIA = ("semantic_relevance", "fluency", "sentiment_appropriateness", "domain_accuracy", "decision")


@pytest.fixture
def study(make_study):
    return make_study("rrgen-001")


def run_import(study, source: str, path: Path, mapping: Path) -> str:
    out = StringIO()
    call_command("import_peer", "--study", study.slug, "--from", source, str(path), "--mapping", str(mapping),
                 stdout=out)
    return out.getvalue()


def stored(study) -> dict[tuple[str, str, int, str], object]:
    """(rater username, item id, output position + 1, criterion) -> value, for the study's ratings."""
    return {(r.assignment.rater.username, r.assignment.item.external_id, r.output.position + 1, r.criterion): r.value
            for r in Rating.objects.filter(assignment__study=study).select_related("assignment__rater",
                                                                                   "assignment__item", "output")}


def ls_expected() -> dict:
    expected = {}
    for task in json.loads(LS_EXPORT.read_text()):
        for annotation in task["annotations"]:
            for region in annotation["result"]:
                key, _, n = region["from_name"].rpartition("_r")
                if key in CRITERIA:
                    value = region["value"].get("rating", (region["value"].get("choices") or [None])[0])
                    expected[(f"ls.{annotation['completed_by']}", task["data"]["item"], int(n), key)] = value
    return expected


def potato_expected() -> dict:
    expected = {}
    for state_file in (POTATO / "annotation_output").glob("*/user_state.json"):
        state = json.loads(state_file.read_text())
        for instance, labels in state["instance_id_to_label_to_value"].items():
            for label, value in labels:
                key, _, n = label["schema"].rpartition("_r")
                expected[(f"potato.{state['user_id']}", instance, int(n), key)] = int(value) if value.isdigit() else value
    return expected


def counts(study) -> tuple[int, int, int]:
    return (Item.objects.filter(study=study).count(), Output.objects.filter(item__study=study).count(),
            Rating.objects.filter(assignment__study=study).count())


def test_label_studio_export_is_imported_whole(study):
    before_items = study.items.count()
    message = run_import(study, "label-studio", LS_EXPORT, LS_MAPPING)
    tasks = json.loads(LS_EXPORT.read_text())
    expected = ls_expected()
    assert study.items.count() - before_items == len(tasks) == 3
    assert Output.objects.filter(item__study=study, item__external_id__in=[t["data"]["item"] for t in tasks]).count() == 9
    assert stored(study) == expected
    per_criterion = Counter(key[3] for key in expected)
    assert per_criterion == {c: 18 for c in CRITERIA}  # 3 tasks x 2 raters x 3 responses
    assert f"imported 3 items (9 outputs; 0 already in the study), 6 annotations by 2 raters" in message
    assert Assignment.objects.filter(study=study, status="submitted").count() == 6
    items = {i.external_id: i for i in study.items.prefetch_related("outputs")}
    for task in tasks:
        item = items[task["data"]["item"]]
        assert item.context == task["data"]["review"]
        assert [o.content for o in item.outputs.order_by("position")] == [task["data"][f"response_{n}"] for n in (1, 2, 3)]


def test_potato_output_is_imported_whole(study):
    before = counts(study)
    message = run_import(study, "potato", POTATO, POTATO_MAPPING)
    expected = potato_expected()
    n_items = sum(1 for line in (POTATO / "items.jsonl").read_text().splitlines() if line.strip())
    after = counts(study)
    assert (after[0] - before[0], after[1] - before[1]) == (n_items, 3 * n_items)
    assert stored(study) == expected
    assert Counter(key[3] for key in expected) == {c: 18 for c in CRITERIA}
    assert "6 annotations by 2 raters" in message


def test_a_second_import_of_the_same_file_is_refused_whole(study):
    run_import(study, "potato", POTATO, POTATO_MAPPING)
    before = counts(study)
    with pytest.raises(CommandError, match="annotated this item already"):
        run_import(study, "potato", POTATO, POTATO_MAPPING)
    assert counts(study) == before


def write_tasks(tmp_path: Path, change) -> Path:
    tasks = json.loads(LS_EXPORT.read_text())
    change(tasks)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks))
    return path


def set_rating(tasks, value):
    tasks[1]["annotations"][0]["result"][1]["value"]["rating"] = value


@pytest.mark.parametrize("change, mapping, names", [
    (lambda t: set_rating(t, 9), None, ["task 2 (id", "fluency_r1", "choose a whole number from 1 to 7"]),
    (lambda t: t[2]["data"].pop("review"), None, ["task 3 (id", "review: missing from the task's data"]),
    (lambda t: None, "context: review\noutputs: [response_1]\ncriteria:\n  fluency: [fluency_r1]\n",
     ["task 1 (id", "semantic_relevance_r1: not in the mapping"]),
    (lambda t: None, "context: review\noutputs: [response_1]\ncriteria:\n  fluncy: [fluency_r1]\n",
     ["criteria.fluncy: the rubric has no such criterion"]),
])
def test_a_bad_file_or_mapping_is_refused_whole(study, tmp_path, change, mapping, names):
    path = write_tasks(tmp_path, change)
    mapping_path = LS_MAPPING
    if mapping is not None:
        mapping_path = tmp_path / "mapping.yaml"
        mapping_path.write_text(mapping)
    before, users = counts(study), get_user_model().objects.count()
    with pytest.raises(CommandError) as refused:
        run_import(study, "label-studio", path, mapping_path)
    for name in names:
        assert name in str(refused.value)
    assert counts(study) == before
    assert get_user_model().objects.count() == users
    assert not Assignment.objects.filter(study=study).exists()


def test_a_bad_potato_label_names_the_file_and_scheme(study, tmp_path):
    project = tmp_path / "potato"
    shutil.copytree(POTATO, project)
    state_file = project / "annotation_output" / "peer-rater-001" / "user_state.json"
    state = json.loads(state_file.read_text())
    labels = state["instance_id_to_label_to_value"]["bench-000002"]
    labels[4][1] = "MAYBE"  # decision_r1
    state_file.write_text(json.dumps(state))
    before = counts(study)
    with pytest.raises(CommandError) as refused:
        run_import(study, "potato", project, POTATO_MAPPING)
    assert "peer-rater-001/user_state.json, instance bench-000002: decision_r1: Response 1: ACCEPT / REJECT: choose one of ACCEPT, REJECT" in str(refused.value)
    assert counts(study) == before


def test_label_studio_tasks_carry_the_items_and_judge_scores(study, make_judge, make_run, tmp_path):
    run_import(study, "label-studio", LS_EXPORT, LS_MAPPING)
    items = {i.external_id: i for i in study.items.prefetch_related("outputs")}
    values = {(ext, position, criterion): (position + len(ext)) % 7 + 1
              for ext in items for position in range(3) for criterion in ("fluency", "domain_accuracy")}
    values.update({(ext, position, "decision"): "ACCEPT" if position else "REJECT" for ext in items for position in range(3)})
    run = make_run(study, make_judge("ls-judge"), values)
    out = tmp_path / "tasks.json"
    call_command("export_study", study.slug, "--format", "label-studio", "--out", str(out), stderr=StringIO())
    tasks = json.loads(out.read_text())
    assert len(tasks) == len(items)
    got = {}
    for task in tasks:
        item = items[task["data"]["id"]]
        outputs = sorted(item.outputs.all(), key=lambda o: o.position)
        assert task["data"] == {"id": item.external_id, "context": item.context,
                                **{f"output_{o.position + 1}": o.content for o in outputs}}
        [prediction] = task["predictions"]
        assert prediction["model_version"] == f"ls-judge run {run.pk}"
        numeric = [v for (ext, _, c), v in values.items() if ext == item.external_id and c != "decision"]
        assert prediction["score"] == pytest.approx(sum(numeric) / len(numeric))
        for region in prediction["result"]:
            key, _, n = region["from_name"].rpartition("_r")
            assert region["to_name"] == f"output_{n}"
            value = region["value"]["rating"] if region["type"] == "rating" else region["value"]["choices"][0]
            got[(item.external_id, int(n) - 1, key)] = value
    assert got == values
    config = (tmp_path / "tasks.labeling_config.xml").read_text()
    assert '<Rating name="fluency_r3" toName="output_3" maxRating="7"/>' in config
    assert '<Choices name="decision_r1" toName="output_1" choice="single">' in config


def test_text_areas_land_on_a_text_criterion(make_study, tmp_path):
    from rubrics.loader import load_preset
    from rubrics.services import rubric_version_create

    data = load_preset("rrgen-001")
    data["slug"], data["name"] = "rrgen-notes", "RRGen with notes"
    data["criteria"].append({"key": "notes", "name": "Notes", "description": "what the rater noted", "kind": "text",
                             "required": False, "target": "output"})
    version, _ = rubric_version_create(data=data)
    study = make_study("rrgen-001")
    study.rubric_version = version
    study.save(update_fields=["rubric_version"])
    mapping = tmp_path / "mapping.yaml"
    # the criteria block is last once the ignore line is gone
    mapping.write_text(LS_MAPPING.read_text().replace("ignore: [notes_r1, notes_r2, notes_r3]\n", "")
                       + "  notes: [notes_r1, notes_r2, notes_r3]\n")
    message = run_import(study, "label-studio", LS_EXPORT, mapping)
    notes = {(f"ls.{a['completed_by']}", t["data"]["item"], int(r["from_name"][-1]), "notes"): r["value"]["text"][0]
             for t in json.loads(LS_EXPORT.read_text()) for a in t["annotations"] for r in a["result"]
             if r["type"] == "textarea"}
    assert len(notes) == 18
    assert {k: v for k, v in stored(study).items() if k[3] == "notes"} == notes
    assert "notes 18" in message


def test_a_study_that_is_not_open_takes_nothing(make_study):
    study = make_study("rrgen-001", status="closed")
    before = counts(study)
    with pytest.raises(CommandError, match="open the study first"):
        run_import(study, "potato", POTATO, POTATO_MAPPING)
    assert counts(study) == before


def test_cancelled_label_studio_annotations_are_skipped(study, tmp_path):
    def cancel(tasks):
        tasks[0]["annotations"][0]["was_cancelled"] = True

    message = run_import(study, "label-studio", write_tasks(tmp_path, cancel), LS_MAPPING)
    assert "5 annotations by 2 raters (1 skipped in the file)" in message
    assert Assignment.objects.filter(study=study, status="submitted").count() == 5


def test_an_item_the_item_import_refuses_is_named_by_its_task(study, tmp_path):
    def blank_id(tasks):
        tasks[1]["data"]["item"] = " "
        for annotation in tasks[1]["annotations"]:
            annotation["was_cancelled"] = True

    before = counts(study)
    with pytest.raises(CommandError) as refused:
        run_import(study, "label-studio", write_tasks(tmp_path, blank_id), LS_MAPPING)
    assert "task 2 (id" in str(refused.value) and "id: required, a non-empty string" in str(refused.value)
    assert counts(study) == before
