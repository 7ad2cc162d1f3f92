import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Item, Output


def _jsonl(rows) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def _row(i, **over):
    row = {"id": f"r{i}", "context": f"Review {i}", "outputs": [
        {"system": "sys-a", "content": f"Thanks {i}"}, {"system": "sys-b", "content": f"Sorry {i}"}]}
    row.update(over)
    return row


@pytest.fixture
def draft_study(make_study):
    return make_study("rrgen-001", items_text=_jsonl([_row(0)]), status="draft")


def test_import_items_writes_items_and_outputs(draft_study, tmp_path, capsys):
    path = tmp_path / "items.jsonl"
    path.write_text(_jsonl([_row(i) for i in range(1, 6)]))
    call_command("import_items", str(path), "--study", draft_study.slug)
    assert "imported 5 items" in capsys.readouterr().out
    assert draft_study.items.count() == 6
    item = draft_study.items.get(external_id="r3")
    assert list(item.outputs.values_list("position", "system", "content")) == [
        (0, "sys-a", "Thanks 3"), (1, "sys-b", "Sorry 3")]


def test_one_bad_line_refuses_the_file_with_its_line_number(draft_study, tmp_path):
    rows = [_row(i) for i in range(1, 5)]
    rows[2]["outputs"][1]["content"] = ""
    path = tmp_path / "items.jsonl"
    path.write_text(_jsonl(rows))
    before = (Item.objects.count(), Output.objects.count())
    with pytest.raises(CommandError) as excinfo:
        call_command("import_items", str(path), "--study", draft_study.slug)
    message = str(excinfo.value)
    assert "line 3: outputs[1].content" in message
    assert "nothing was imported" in message
    assert (Item.objects.count(), Output.objects.count()) == before


def test_invalid_json_and_duplicates_are_reported_per_line(draft_study, tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(_jsonl([_row(1)]) + "{not json\n" + _jsonl([_row(1), _row(0)]))
    with pytest.raises(CommandError) as excinfo:
        call_command("import_items", str(path), "--study", draft_study.slug)
    message = str(excinfo.value)
    assert "line 2: not valid JSON" in message
    assert "line 3: id: duplicate id 'r1' (first on line 1)" in message
    assert "line 4: id: id 'r0' already exists in this study" in message
    assert draft_study.items.count() == 1


def test_csv_import_with_gold(make_study, tmp_path):
    study = make_study("aqua-003", items_text=_jsonl([_row(0)]), status="draft")
    path = tmp_path / "items.csv"
    path.write_text(
        "id,context,output_1_system,output_1_content,output_1_kind,gold_label\n"
        'g1,She go to school.,gec-x,"She {-go-}{+goes+} to school.",diff,TP\n'
        'g2,"He have, two cats.",gec-y,"He {-have,-}{+has+} two cats.",diff,FP2\n'
    )
    call_command("import_items", str(path), "--study", study.slug)
    item = study.items.get(external_id="g2")
    assert item.gold == {"label": "FP2"}
    assert item.outputs.get().kind == "diff"


def test_csv_unknown_gold_criterion_is_refused(make_study, tmp_path):
    study = make_study("aqua-003", items_text=_jsonl([_row(0)]), status="draft")
    path = tmp_path / "items.csv"
    path.write_text("id,context,output_1_system,output_1_content,gold_nonsense\nx,c,s,t,1\n")
    with pytest.raises(CommandError, match=r"line 2: gold.nonsense: unknown criterion"):
        call_command("import_items", str(path), "--study", study.slug)
    assert not study.items.filter(external_id="x").exists()


def test_unknown_study_is_a_clear_error(db, tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(_jsonl([_row(1)]))
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("import_items", str(path), "--study", "nope")


def test_every_demo_file_imports(make_study):
    for preset in ["feedback-000", "rrgen-001", "codegen-002", "aqua-003", "fulltext-004"]:
        study = make_study(preset, status="draft")
        assert study.items.count() >= 3, preset
